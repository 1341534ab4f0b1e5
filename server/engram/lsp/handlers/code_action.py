"""textDocument/codeAction: teach from a selection; confirm / flag / pin a memory."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from engram.lsp.actions import build_code_actions
from engram.lsp.folder import symbol_at

if TYPE_CHECKING:
    from engram.lsp.server import EngramLanguageServer

KINDS = [
    types.CodeActionKind.QuickFix,
    types.CodeActionKind.Refactor,
    types.CodeActionKind.Source,
]


def register(server: EngramLanguageServer) -> None:
    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=KINDS, resolve_provider=False),
    )
    def code_action(
        ls: EngramLanguageServer, params: types.CodeActionParams
    ) -> list[types.CodeAction] | None:
        doc = ls.docs.get(params.text_document.uri)
        if doc is None:
            return None
        rng = params.range
        lines = ls.document_lines(doc.uri)
        here = [
            m
            for m in doc.memories
            if (span := doc.spans.get(m.id)) is not None
            and span.start <= rng.end.line
            and rng.start.line <= span.end
        ]
        symbol = symbol_at(doc.folder.symbols.get(doc.rel, ()), rng.start.line)
        actions = build_code_actions(
            rel_path=doc.rel,
            lines=lines,
            rng=rng,
            diagnostics=params.context.diagnostics,
            memories_here=here,
            symbol=symbol.qualname if symbol else None,
            impact_available=doc.folder.has_graph,
        )
        only = params.context.only
        if only:
            actions = [
                a for a in actions if any(str(a.kind or "").startswith(str(k)) for k in only)
            ]
        return actions or None
