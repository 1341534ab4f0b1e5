"""Diagnostics out: build them from a document's tracked memories, push (debounced while
typing) or ask a pulling client to refresh (docs/lsp.md, "Diagnostics settings")."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from lsprotocol import types

from engram.lsp import anchors as anchor_ops
from engram.lsp.diagnostics import build_diagnostics, result_id

if TYPE_CHECKING:
    from engram.lsp.server import EngramLanguageServer
    from engram.lsp.session import DocumentState


def document_lines(ls: EngramLanguageServer, uri: str) -> list[str]:
    """The editor's current text of ``uri`` (pygls keeps it), as lines."""
    try:
        return anchor_ops.split_lines(ls.workspace.get_text_document(uri).source)
    except Exception:
        return []


def diagnostics_for(ls: EngramLanguageServer, doc: DocumentState) -> list[types.Diagnostic]:
    if not doc.loaded:
        return []
    lines: list[str] | None = None

    def line_length(line: int) -> int:
        nonlocal lines
        if lines is None:
            lines = document_lines(ls, doc.uri)
        return len(lines[line]) if 0 <= line < len(lines) else 0

    folder = doc.folder
    return build_diagnostics(
        doc.memories,
        doc.spans,
        doc.rel,
        folder.policy,
        ls.session.clock(),
        lambda rel: ls.session.uri_for(folder, rel),
        line_length,
        doc.partners,
    )


def publish(ls: EngramLanguageServer, doc: DocumentState) -> None:
    """Push the document's diagnostics now (when pushing)."""
    if doc.pending is not None:
        doc.pending.cancel()
        doc.pending = None
    if not ls.session.mode.push:
        return
    diagnostics = diagnostics_for(ls, doc)
    doc.published_id = result_id(diagnostics)
    doc.folder.ledger.applied(d.data["id"] for d in diagnostics if isinstance(d.data, dict))
    version = None
    with contextlib.suppress(Exception):
        version = ls.workspace.get_text_document(doc.uri).version
    ls.text_document_publish_diagnostics(
        types.PublishDiagnosticsParams(uri=doc.uri, diagnostics=diagnostics, version=version)
    )


def schedule_publish(ls: EngramLanguageServer, doc: DocumentState) -> None:
    """Debounced push: typing moves diagnostics at most every ``debounce_ms``."""
    if not ls.session.mode.push:
        return
    if doc.pending is not None:
        doc.pending.cancel()
    config = doc.folder.config
    delay = (config.diagnostics.debounce_ms if config is not None else 300) / 1000.0
    doc.pending = ls.loop.call_later(max(0.0, delay), publish, ls, doc)


def request_pull_refresh(ls: EngramLanguageServer) -> None:
    """Tell a pulling client to ask again (``workspace/diagnostic/refresh``)."""
    if not ls.session.mode.pull:
        return
    caps = ls.client_capabilities.workspace
    if caps is not None and caps.diagnostics is not None and caps.diagnostics.refresh_support:
        ls.spawn(ls.workspace_diagnostic_refresh_async(None), "diagnostic refresh")
