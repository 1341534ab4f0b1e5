"""Engram's language server (``engram serve``): diagnostics, hover, code actions, commands.

Importing this package is cheap on purpose: pygls, lsprotocol and the engine are imported
only when :func:`create_server` or :func:`run_server` is called, and LanceDB, the ONNX
model and tree-sitter only after ``initialized``, in a background thread, so that the
editor's ``initialize`` request is answered as soon as pygls is up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engram.lsp.server import EngramLanguageServer


def create_server() -> EngramLanguageServer:
    """A fully wired server object (not started); tests and embedders use this."""
    from engram.lsp.features import create_server as _create

    return _create()


def run_server(
    workspace: str | None = None, tcp: str | None = None, log_level: str | None = None
) -> None:
    """Serve LSP on stdio, or on ``HOST:PORT`` when ``tcp`` is given (for debugging).

    ``workspace`` is the fallback root when the client sends no root/workspace folders;
    ``log_level`` (debug, info, warning, error) is the stderr log's, warning by default.
    """
    from engram.lsp.features import run_server as _run

    _run(workspace, tcp, log_level)


__all__ = ["create_server", "run_server"]
