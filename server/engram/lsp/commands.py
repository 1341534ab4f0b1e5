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
from typing import TYPE_CHECKING

import attrs

from engram.lsp.registry import CommandContext, CommandRegistry
from engram.model import Memory, to_json_object, to_jsonable

if TYPE_CHECKING:
    from engram.api.declare import JsonObject, UseCase

#: An editor-only addition to a command's JSON: ``(ctx, args, result, json) -> json``.
Extra = Callable[[CommandContext, object, object, "JsonObject"], Awaitable["JsonObject"]]


def _bare_event(raw: Mapping[str, object]) -> Mapping[str, object]:
    """``engram.observe`` takes the event itself or ``{"event": {...}}`` (docs/commands.md)."""
    return raw if set(raw) == {"event"} else {"event": dict(raw)}


#: Argument shapes an editor may send that the declaration spells another way.
Reshape = Callable[[Mapping[str, object]], Mapping[str, object]]
RESHAPE: dict[str, Reshape] = {"observe": _bare_event}


async def _open(ctx: CommandContext, args: object, result: object, out: JsonObject) -> JsonObject:
    """Show the memory's first anchor (or related file); read from the JSON rendering, so
    it is the same whether the engine or this process ran ``open``."""
    memory = out.get("memory")
    record = memory if isinstance(memory, dict) else {}
    anchors, related = record.get("anchors"), record.get("related_files")
    shown = False
    if isinstance(anchors, list) and anchors and isinstance(anchors[0], dict):
        line = anchors[0].get("start_line")
        file = anchors[0].get("file")
        if isinstance(file, str):
            shown = await ctx.show_document(file, line if isinstance(line, int) else 0)
    elif isinstance(related, list) and related and isinstance(related[0], str):
        shown = await ctx.show_document(related[0], 0)
    return {**out, "shown": shown}


async def _stats(ctx: CommandContext, args: object, result: object, out: JsonObject) -> JsonObject:
    status = ctx.status()
    return {
        **out,
        "indexing": status.get("indexing"),
        "ready": status.get("ready"),
        "session": to_jsonable(ctx.session().counts()),
    }


async def _session(
    ctx: CommandContext, args: object, result: object, out: JsonObject
) -> JsonObject:
    """The editor session's ledger, with the observer's own card under ``observer``."""
    ledger = ctx.session()
    found, review_queue = await ctx.memories(ledger.all_ids(), 50)
    summary = to_json_object(ledger.summary(found, review_queue, out))
    return summary


EXTRAS: dict[str, Extra] = {"open": _open, "stats": _stats, "session_summary": _session}
#: Commands whose use case may fail without failing the command (their extra still answers).
TOLERANT = frozenset({"session_summary"})


#: The key a client adds to a command's arguments to say which workspace folder runs it
#: when no ``file`` argument picks one (multi-root: search, review, stats, report, share…
#: went to the first folder whatever file was open). Routing, not an argument of the use
#: case: taken out before the declaration checks the rest (docs/commands.md).
FOLDER_KEY = "workspaceFolder"


@attrs.frozen
class Given:
    """A command's arguments: as the client sent them (reshaped), for the engine to check
    again, and as this process checked them."""

    raw: Mapping[str, object]
    #: the declaration's argument object (``usecase.args``; erased: one handler per use case)
    args: object
    #: the folder the client picked (:data:`FOLDER_KEY`), an absolute path
    folder: str | None = None


def command_handler(
    usecase: UseCase[object, object],
) -> Callable[[CommandContext, Given], Awaitable[JsonObject]]:
    """The executeCommand handler of one declared use case."""
    extra = EXTRAS.get(usecase.name)

    async def handle(ctx: CommandContext, given: Given) -> JsonObject:
        args = given.args
        file = usecase.folder_file(args) or given.folder
        memory_id = usecase.memory_of(args)
        if memory_id is not None:
            file = ctx.folder_of_memory(memory_id) or file
        if usecase.name == "reindex":
            from engram.api.workspace import ReindexArgs  # declared with the use case

            files = args.files if isinstance(args, ReindexArgs) else None
            result = await ctx.reindex(files, file)
            return to_json_object(result)
        try:
            reply = await ctx.in_engine(usecase.name, given.raw, file)
        except Exception as exc:
            if usecase.name not in TOLERANT:
                raise
            unavailable: JsonObject = {"unavailable": _first_line(exc)}
            return await extra(ctx, args, unavailable, unavailable) if extra else unavailable
        if reply is not None:  # the warm engine ran it; its write events refresh documents
            ledger = ctx.session(file)
            ledger.applied(reply.shown)
            for memory_id in reply.learned:
                ledger.learned(memory_id)
            if reply.corrected is not None:
                ledger.corrected(*reply.corrected)
            out = reply.json
            if extra is not None:
                out = await extra(ctx, args, out, out)
            return out
        return await _in_process(ctx, usecase, args, file)

    return handle


def _first_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else ""


async def _in_process(
    ctx: CommandContext, usecase: UseCase[object, object], args: object, file: str | None
) -> JsonObject:
    """The command on this process's engine: no workspace engine serves the folder."""
    from engram.api.declare import Surface, with_actor

    extra = EXTRAS.get(usecase.name)
    who = ctx.actor()  # an agent's LSP client is never a person (docs/trust.md)
    if who is not None:
        args = with_actor(args, who.label)
    try:
        result = await ctx.call(lambda e: usecase.execute(e, args, Surface.LSP), file)
    except Exception as exc:
        if usecase.name not in TOLERANT:
            raise
        # the observer is optional here: the editor's own ledger still answers
        result = {"unavailable": _first_line(exc)}
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


class _Declared:
    """One declared command, its use case looked up (and its ``engram.api`` module
    imported) when the command first runs: ``initialize`` lists the names only."""

    def __init__(self, usecase: str, module: str) -> None:
        self.usecase, self.module = usecase, module
        self._handler: Callable[[CommandContext, Given], Awaitable[JsonObject]] | None = None

    def declaration(self) -> UseCase[object, object]:
        from engram.api import by_name

        return by_name(self.usecase, self.module)  # imports engram.api.<module> only

    def parse(self, raw: Mapping[str, object]) -> Given:
        from engram.api.declare import Surface

        folder = raw.get(FOLDER_KEY)
        if FOLDER_KEY in raw:
            raw = {key: value for key, value in raw.items() if key != FOLDER_KEY}
        reshape = RESHAPE.get(self.usecase)
        shaped = reshape(raw) if reshape is not None else raw
        parsed = self.declaration().parse(shaped, Surface.LSP)
        return Given(shaped, parsed, folder if isinstance(folder, str) and folder else None)

    async def handle(self, ctx: CommandContext, given: Given) -> JsonObject:
        if self._handler is None:
            self._handler = command_handler(self.declaration())
        return await self._handler(ctx, given)


def register_commands(registry: CommandRegistry) -> None:
    """Every declared LSP use case (the MCP hub adds ``engram.mcp.*`` the same way), from
    the table generated from the declarations (``engram.lsp.declared_table``)."""
    from engram.lsp.declared_table import DECLARED

    for command, usecase, module, summary in DECLARED:
        declared = _Declared(usecase, module)
        registry.register_parsed(command, declared.parse, declared.handle, summary=summary)


__all__ = ["EXTRAS", "RESHAPE", "Given", "command_handler", "register_commands"]
