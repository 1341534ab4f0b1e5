"""The ``engram.*`` executeCommand API, derived from the use-case declarations.

Every use case ``engram.api`` offers on the LSP surface becomes one command: its arguments
are checked by the declaration (one JSON object; snake_case or camelCase keys), it runs in
a worker thread with the engine of the folder its ``file`` belongs to, and its result is
the declaration's JSON rendering (docs/commands.md is generated from the same
declarations). What only an editor needs is added here and nowhere else: the session
ledger (memories shown, learned, corrected), republishing diagnostics after a write, and
the few commands that talk back to the client (``engram.open``, ``engram.reindex``,
``engram.stats``, ``engram.sessionSummary``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from engram.api import Surface, UseCase, on
from engram.api.declare import with_actor
from engram.lsp.registry import CommandContext, CommandRegistry
from engram.model import Memory, to_jsonable

if TYPE_CHECKING:
    from engram.api.declare import JsonObject
    from engram.app import Engine

LSP = Surface.LSP

#: An editor-only addition to a command's JSON: ``(ctx, args, result, json) -> json``.
Extra = Callable[[CommandContext, Any, Any, "JsonObject"], Awaitable["JsonObject"]]


def _bare_event(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    """``engram.observe`` takes the event itself or ``{"event": {...}}`` (docs/commands.md)."""
    return raw if set(raw) == {"event"} else {"event": dict(raw)}


#: Argument shapes an editor may send that the declaration spells another way.
RESHAPE: dict[str, Callable[[Mapping[str, Any]], Mapping[str, Any]]] = {"observe": _bare_event}


async def _open(ctx: CommandContext, args: Any, memory: Memory, out: JsonObject) -> JsonObject:
    shown = False
    if memory.anchors:
        anchor = memory.anchors[0]
        shown = await ctx.show_document(anchor.file, anchor.start_line or 0)
    elif memory.related_files:
        shown = await ctx.show_document(memory.related_files[0], 0)
    return {**out, "shown": shown}


async def _stats(ctx: CommandContext, args: Any, result: Any, out: JsonObject) -> JsonObject:
    status = ctx.status()
    return {
        **out,
        "indexing": status.get("indexing"),
        "ready": status.get("ready"),
        "session": to_jsonable(ctx.session().counts()),
    }


async def _session(ctx: CommandContext, args: Any, result: Any, out: JsonObject) -> JsonObject:
    """The editor session's ledger, with the observer's own card under ``observer``."""
    from engram.app.memories import list_memories

    ledger = ctx.session()
    ids = ledger.all_ids()

    def read(engine: Engine) -> tuple[dict[str, Memory], list[Memory]]:
        found = {m.id: m for m in engine.store.get_many(ids)} if ids else {}
        return found, list_memories(engine, needs_review=True, limit=50)

    found, review_queue = await ctx.call(read)
    summary: JsonObject = to_jsonable(ledger.summary(found, review_queue, out))
    return summary


EXTRAS: dict[str, Extra] = {"open": _open, "stats": _stats, "session_summary": _session}
#: Commands whose use case may fail without failing the command (their extra still answers).
TOLERANT = frozenset({"session_summary"})


def command_handler(
    usecase: UseCase[Any, Any],
) -> Callable[[CommandContext, Any], Awaitable[JsonObject]]:
    """The executeCommand handler of one declared use case."""
    extra = EXTRAS.get(usecase.name)

    async def handle(ctx: CommandContext, args: Any) -> JsonObject:
        file = usecase.folder_file(args)
        if usecase.name == "reindex":
            result = await ctx.reindex(args.files, file)
            return to_jsonable(result)  # type: ignore[no-any-return]
        who = ctx.actor()  # an agent's LSP client is never a person (docs/trust.md)
        if who is not None:
            args = with_actor(args, who.label)
        try:
            result = await ctx.call(lambda e: usecase.execute(e, args, LSP), file)
        except Exception as exc:
            if usecase.name not in TOLERANT:
                raise
            # the observer is optional here: the editor's own ledger still answers
            result = {"unavailable": str(exc).splitlines()[0] if str(exc) else ""}
        ledger = ctx.session(file)
        if usecase.shown is not None:
            ledger.applied(list(usecase.shown(result)))
        if usecase.learned is not None:
            for memory_id in usecase.learned(result):
                ledger.learned(memory_id)
        if usecase.corrected is not None:
            ledger.corrected(*usecase.corrected(result))
        touched = usecase.touched(result) if usecase.touched is not None else None
        if touched is not None:
            memories = [m for m in touched if isinstance(m, Memory)]
            ids = [m for m in touched if isinstance(m, str)]
            if ids:
                memories += await ctx.call(lambda e: e.store.get_many(ids))
            if memories or not touched:
                await ctx.memories_changed(memories, file)
        out = result if isinstance(result, dict) else usecase.to_json(result)
        if extra is not None:
            out = await extra(ctx, args, result, out)
        return out

    return handle


def register_commands(registry: CommandRegistry) -> None:
    """Every declared LSP use case (the MCP hub adds ``engram.mcp.*`` the same way)."""
    for usecase in on(LSP):
        reshape = RESHAPE.get(usecase.name)

        def parse(raw: Mapping[str, Any], u: UseCase[Any, Any] = usecase, r: Any = reshape) -> Any:
            return u.parse(r(raw) if r is not None else raw, LSP)

        registry.register_parsed(
            usecase.lsp, parse, command_handler(usecase), summary=usecase.summary
        )


__all__ = ["EXTRAS", "RESHAPE", "command_handler", "register_commands"]
