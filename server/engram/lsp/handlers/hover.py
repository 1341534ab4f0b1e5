"""textDocument/hover: the memories under the cursor and the symbol's impact, from memory."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from engram.lsp.feature import Feature
from engram.lsp.folder import symbol_at
from engram.lsp.hover import hover_markdown, memories_at

if TYPE_CHECKING:
    from engram.lsp.server import EngramLanguageServer


def register(server: EngramLanguageServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(ls: EngramLanguageServer, params: types.HoverParams) -> types.Hover | None:
        # Synchronous on purpose: everything it reads is already in memory, so it answers
        # in microseconds and never waits behind a worker thread.
        doc = ls.session.docs.get(params.text_document.uri)
        if doc is None or not doc.loaded:
            return None
        line = params.position.line
        folder = doc.folder
        symbol = symbol_at(folder.symbols.get(doc.rel, ()), line)
        on_definition = symbol is not None and symbol.span.start == line
        memories = memories_at(
            doc.memories, doc.spans, line, symbol.qualname if on_definition and symbol else None
        )
        impact = folder.impact.get(doc.rel) if on_definition else None
        text = hover_markdown(
            memories,
            impact,
            ls.session.clock(),
            symbol.qualname if symbol and on_definition else None,
            doc.partners,
        )
        if text is None:
            return None
        folder.ledger.applied(m.id for m in memories)
        if memories:
            ls.observe_editor(doc, "hover")  # a memory was looked at (debounced)
        return types.Hover(
            contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text),
        )


FEATURE = Feature("hover", register)
