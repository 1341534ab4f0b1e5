"""textDocument/codeAction: teach from a selection; confirm / flag / pin a memory; and the
actions extensions offer for a selection (the MCP hub's matching tools)."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from engram.lsp.actions import build_code_actions, kind_requested, selection_text
from engram.lsp.context import ServerContext
from engram.lsp.feature import Feature
from engram.lsp.folder import symbol_at
from engram.lsp.publishing import document_lines

log = logging.getLogger(__name__)

#: Extension actions must not slow the lightbulb down: past this they are skipped.
EXTENSION_ACTION_TIMEOUT_S = 0.25

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
    async def code_action(
        ls: EngramLanguageServer, params: types.CodeActionParams
    ) -> list[types.CodeAction] | None:
        doc = ls.session.docs.get(params.text_document.uri)
        if doc is None or doc.folder.left_out:  # a folder nobody set up: nothing to offer
            return None
        rng = params.range
        lines = document_lines(ls, doc.uri)
        here = [
            m
            for m in doc.memories
            if (span := doc.spans.get(m.id)) is not None
            and span.start <= rng.end.line
            and rng.start.line <= span.end
        ]
        symbol = symbol_at(doc.folder.symbols.get(doc.rel, ()), rng.start.line)
        # by its absolute path: relative to its folder, it was the first folder's file
        file = str(doc.folder.root / doc.rel)
        actions = build_code_actions(
            rel_path=doc.rel,
            lines=lines,
            rng=rng,
            diagnostics=params.context.diagnostics,
            memories_here=here,
            symbol=symbol.qualname if symbol else None,
            impact_available=doc.folder.has_graph,
            file_arg=file,
        )
        # only for a real selection: clients ask for code actions on every cursor move
        if rng.start != rng.end and ls.registry.action_providers:
            selected = selection_text(lines, rng)
            if selected.strip():
                actions.extend(await _extension_actions(ls, file, selected))
        only = params.context.only
        if only:
            actions = [a for a in actions if kind_requested(a.kind, only)]
        return actions or None


async def _extension_actions(
    ls: EngramLanguageServer, file: str, selected: str
) -> list[types.CodeAction]:
    """An extension's actions for a selection of ``file`` (absolute). Given the path
    relative to its folder, the MCP hub's were the first folder's in a multi-root window:
    its hub suggested the tools, and the tool's result was saved in its store."""
    found: list[types.CodeAction] = []
    for provider in ls.registry.action_providers:
        try:
            specs: list[dict[str, Any]] = await asyncio.wait_for(
                provider(ServerContext(ls), file, selected), EXTENSION_ACTION_TIMEOUT_S
            )
        except Exception as exc:  # an extension must never break the lightbulb
            log.debug("extension code actions skipped: %r", exc)
            continue
        for spec in specs:
            command = types.Command(
                title=spec["title"], command=spec["command"], arguments=[spec["arguments"]]
            )
            found.append(
                types.CodeAction(
                    title=spec["title"], kind=types.CodeActionKind.Refactor, command=command
                )
            )
    return found


FEATURE = Feature("code actions", register)
