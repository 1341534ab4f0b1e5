"""The hub's ``workspace/executeCommand`` commands, registered into the LSP's registry.

``engram.lsp.features.create_server`` calls :func:`register_commands` (and lists
:func:`settings_feature` with the other features). Commands (each takes one JSON object;
keys snake_ or camelCase):

- ``engram.mcp.list``    ``{server?, withSchema?, file?}`` — cached tools and server states
- ``engram.mcp.search``  ``{query, file?, module?, phase?, k?}`` — the focused list, with schemas
- ``engram.mcp.call``    ``{tool, arguments?, file?, timeout?}`` — call one tool (lazy connect)
- ``engram.mcp.status``  ``{file?}`` — servers, trust, cache, live connections
- ``engram.mcp.refresh`` ``{names?, force?, file?}`` — introspect new/changed trusted servers
- ``engram.mcp.suggest`` ``{file?, selection?, k?}`` — best tools for a selection (code actions)
- ``engram.mcp.run``     ``{tool, arguments?, file?}`` — what a tool code action runs: the call,
  then the result shown to the user (``window/showMessage``)

:func:`code_actions` offers, for a selection, the best matching tools that can be called with
the selection alone (no required argument, or exactly one required string argument, filled
with the selected text); the LSP server asks it on every ``textDocument/codeAction``.

There is deliberately no ``trust`` command: approving a workspace-defined server is the
user's decision at a terminal (``engram mcp trust NAME``), not something a client or an
agent driving the editor can do.

One :class:`~engram.mcphub.hub.McpHub` per workspace folder lives in :class:`HubCache`, owned by
the registration (no module-level state); its connections run on the server's event loop.
A notable tool result becomes a reviewable memory through the remember use case (the folder's
engine).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, TypedDict

import attrs

from engram.lsp.feature import Feature, SettingsChange
from engram.lsp.registry import Args, CommandContext, CommandRegistry

if TYPE_CHECKING:
    from engram.api.memories import RememberArgs
    from engram.app import Engine
    from engram.app.remember import RememberResult
    from engram.jsontypes import JsonObject
    from engram.lsp.server import EngramLanguageServer
    from engram.mcphub.hub import McpHub
    from engram.mcphub.results import ObservationDraft

log = logging.getLogger(__name__)


@attrs.define
class ListArgs(Args):
    server: str | None = None
    with_schema: bool = False
    file: str | None = None

    ALIASES: ClassVar[dict[str, str]] = {"schema": "with_schema"}


@attrs.define
class SearchArgs(Args):
    query: str = ""
    file: str | None = None
    module: str | None = None
    phase: str | None = None
    k: int | None = None

    ALIASES: ClassVar[dict[str, str]] = {"limit": "k", "uri": "file"}


@attrs.define
class CallArgs(Args):
    tool: str
    arguments: dict[str, object] = attrs.field(factory=dict)
    file: str | None = None
    timeout: float | None = None

    ALIASES: ClassVar[dict[str, str]] = {"args": "arguments", "name": "tool", "uri": "file"}


@attrs.define
class StatusArgs(Args):
    file: str | None = None


@attrs.define
class RefreshArgs(Args):
    names: list[str] = attrs.field(factory=list)
    force: bool = False
    file: str | None = None


@attrs.define
class SuggestArgs(Args):
    file: str | None = None
    selection: str = ""
    k: int = 3

    ALIASES: ClassVar[dict[str, str]] = {"uri": "file", "text": "selection"}


@attrs.define
class RunArgs(Args):
    tool: str
    arguments: dict[str, object] = attrs.field(factory=dict)
    file: str | None = None
    ALIASES: ClassVar[dict[str, str]] = {"args": "arguments", "name": "tool", "uri": "file"}


#: Longest selection handed to a tool as its argument, and longest result shown.
MAX_SELECTION_ARGUMENT = 2000
MAX_SHOWN_RESULT = 400


def selection_arguments(schema: object, selection: str) -> dict[str, str] | None:
    """Arguments that call a tool with just the selection, or ``None`` when it needs more."""
    if not isinstance(schema, dict):
        return {}
    properties = schema.get("properties") or {}
    required = [r for r in schema.get("required") or [] if isinstance(r, str)]
    if not required:
        return {}
    if len(required) == 1 and isinstance(properties, dict):
        spec = properties.get(required[0]) or {}
        if isinstance(spec, dict) and spec.get("type") in ("string", None) and selection:
            return {required[0]: selection[:MAX_SELECTION_ARGUMENT]}
    return None


class ToolActionSpec(TypedDict):
    """A code action that runs one tool with the selection as its argument."""

    title: str
    tool: str
    arguments: dict[str, str]


def tool_action_specs(
    tools: Sequence[Mapping[str, object]], selection: str
) -> list[ToolActionSpec]:
    """``[{title, tool, arguments}]`` for the found tools that the selection can drive."""
    specs: list[ToolActionSpec] = []
    for tool in tools:
        arguments = selection_arguments(tool.get("input_schema"), selection)
        if arguments is None:
            continue
        about = " ".join(str(tool.get("description") or "").split())[:60]
        name = str(tool["name"])
        title = f"MCP: {name}" + (f" — {about}" if about else "")
        specs.append({"title": title, "tool": name, "arguments": arguments})
    return specs


class HubCache:
    """One hub per workspace root, created on first use; :meth:`close` ends every child.

    A command uses a hub through :meth:`use`; :meth:`drop` (an ``mcp`` settings change)
    retires a folder's hub so the next command builds one with the new settings, and
    closes the retired one (its connections and child processes) when the last command
    using it finishes, never under it. Only the event loop touches it.
    """

    def __init__(self) -> None:
        self._hubs: dict[Path, McpHub] = {}
        #: commands using each hub, by ``id``
        self._uses: dict[int, int] = {}
        #: dropped hubs still in use: closed by their last command
        self._retired: dict[int, McpHub] = {}

    async def hub(self, ctx: CommandContext, file: str | None) -> McpHub:
        workspace, config = await ctx.folder_settings(file)
        hub = self._hubs.get(workspace.root)
        if hub is None:
            from engram.mcphub.hub import McpHub

            hub = McpHub(workspace, config)
            self._hubs[workspace.root] = hub
        return hub

    @contextlib.asynccontextmanager
    async def use(self, ctx: CommandContext, file: str | None) -> AsyncIterator[McpHub]:
        """``async with cache.use(ctx, file) as hub:`` the folder's hub, kept open meanwhile."""
        hub = await self.hub(ctx, file)
        self._uses[id(hub)] = self._uses.get(id(hub), 0) + 1
        try:
            yield hub
        finally:
            left = self._uses.pop(id(hub)) - 1
            if left:
                self._uses[id(hub)] = left
            else:
                retired = self._retired.pop(id(hub), None)
                if retired is not None:
                    log.info("closing a replaced MCP hub: its last command finished")
                    await retired.close()

    async def drop(self, root: Path) -> bool:
        """Retire the hub of ``root`` (its settings changed); ``False`` if none was open."""
        hub = self._hubs.pop(root, None)
        if hub is None:
            return False
        if self._uses.get(id(hub)):
            self._retired[id(hub)] = hub
        else:
            await hub.close()
        return True

    @property
    def open_roots(self) -> list[Path]:
        """The roots with a hub (for logs and tests)."""
        return sorted(self._hubs)

    async def close(self) -> None:
        """Shutdown: close every hub, the retired ones too."""
        hubs = [*self._hubs.values(), *self._retired.values()]
        self._hubs.clear()
        self._retired.clear()
        for hub in hubs:
            await hub.close()


def settings_feature(cache: HubCache) -> Feature:
    """The hub's part of a settings change: an ``mcp`` change closes and rebuilds only the
    folder's hub (pool size, timeouts), keeping the engine (``config.SECTION_RELOAD``)."""

    async def rebuild_hub(_ls: EngramLanguageServer, change: SettingsChange) -> None:
        if await cache.drop(change.folder.workspace.root):
            log.info("MCP settings of %s changed: its hub is rebuilt", change.folder.root)

    return Feature(
        "mcp hub", lambda server: None, settings=frozenset({"mcp"}), reconfigure=rebuild_hub
    )


async def code_actions(
    cache: HubCache, ctx: CommandContext, file: str | None, selection: str, k: int = 3
) -> list[JsonObject]:
    """Tool code actions for a selection: ``[{title, command, arguments}]`` (cheap: cache only)."""
    text = " ".join(selection.split())
    if not text:
        return []
    async with cache.use(ctx, file) as hub:
        found = hub.search_sync(text[:300], file=file, k=k * 2, with_schema=True)
    listed = found.get("tools")
    tools = [t for t in listed if isinstance(t, dict)] if isinstance(listed, list) else []
    scores = {t.get("name"): t.get("score") for t in tools}
    return [
        {
            "title": spec["title"],
            "command": "engram.mcp.run",
            "arguments": {"tool": spec["tool"], "arguments": spec["arguments"], "file": file},
        }
        for spec in tool_action_specs(tools, selection.strip())[:k]
        if _score(scores.get(spec["tool"])) > 0.05
    ]


def _score(value: object) -> float:
    return float(value) if isinstance(value, int | float) else 0.0


async def _save_drafts(
    ctx: CommandContext, drafts: Sequence[ObservationDraft], file: str | None
) -> list[str]:
    """Each draft saved as the declared ``remember`` with the same arguments the MCP server's
    ``engram_call_tool`` sends (``draft.declared_args()``: ``observed_by: mcp_hub``, so one
    rule makes it an ``mcp_auto`` memory in review on both hubs; docs/mcp-hub.md). In the
    workspace engine when it serves the folder, else in-process, with this client's actor."""
    from engram.api.declare import Surface, with_actor
    from engram.api.memories import REMEMBER

    ids: list[str] = []
    for draft in drafts:
        raw = draft.declared_args()
        try:
            reply = await ctx.in_engine(REMEMBER.name, raw, file)
            if reply is not None:  # its write events refresh the open documents
                ids.append(str(reply.json["id"]))
                continue
            args = REMEMBER.parse(raw, Surface.LSP)
            who = ctx.actor()
            if who is not None:
                args = with_actor(args, who.label)

            def save(engine: Engine, a: RememberArgs = args) -> RememberResult:
                return REMEMBER.execute(engine, a, Surface.LSP)

            result = await ctx.call(save, file)
        except Exception as exc:  # a memory failure must not fail the tool call
            log.warning("could not save MCP observation: %s", exc)
            continue
        ids.append(result.memory.id)
        await ctx.memories_changed([result.memory], file)
    return ids


def register_commands(registry: CommandRegistry, hubs: HubCache | None = None) -> HubCache:
    """Add the ``engram.mcp.*`` commands; returns the hub cache (close it at shutdown)."""
    cache = hubs or HubCache()

    async def mcp_list(ctx: CommandContext, args: ListArgs) -> JsonObject:
        async with cache.use(ctx, args.file) as hub:
            return await hub.list(args.server, with_schema=args.with_schema)

    async def mcp_search(ctx: CommandContext, args: SearchArgs) -> JsonObject:
        async with cache.use(ctx, args.file) as hub:
            return await hub.search(
                args.query, file=args.file, module=args.module, phase=args.phase, k=args.k
            )

    async def mcp_call(ctx: CommandContext, args: CallArgs) -> JsonObject:
        drafts: list[ObservationDraft] = []
        async with cache.use(ctx, args.file) as hub:
            result = await hub.call(
                args.tool,
                args.arguments,
                file=args.file,
                timeout=args.timeout,
                memory_sink=drafts.append,
            )
        if drafts:
            result["memory_ids"] = await _save_drafts(ctx, drafts, args.file)
        return result

    async def mcp_status(ctx: CommandContext, args: StatusArgs) -> JsonObject:
        async with cache.use(ctx, args.file) as hub:
            return await hub.status()

    async def mcp_refresh(ctx: CommandContext, args: RefreshArgs) -> JsonObject:
        async with cache.use(ctx, args.file) as hub:
            return await hub.refresh(args.names or None, force=args.force)

    async def mcp_suggest(ctx: CommandContext, args: SuggestArgs) -> JsonObject:
        async with cache.use(ctx, args.file) as hub:
            return {"tools": hub.suggest_tools(args.file, args.selection, k=args.k)}

    registry.register("engram.mcp.list", ListArgs, mcp_list, summary="cached MCP tools and servers")
    registry.register(
        "engram.mcp.search", SearchArgs, mcp_search, summary="the few MCP tools that fit a task"
    )
    registry.register("engram.mcp.call", CallArgs, mcp_call, summary="call an MCP tool lazily")
    registry.register(
        "engram.mcp.status", StatusArgs, mcp_status, summary="MCP servers, trust, connections"
    )
    registry.register(
        "engram.mcp.refresh", RefreshArgs, mcp_refresh, summary="introspect new or changed servers"
    )

    async def mcp_run(ctx: CommandContext, args: RunArgs) -> JsonObject:
        result = await mcp_call(
            ctx, CallArgs(tool=args.tool, arguments=args.arguments, file=args.file)
        )
        from engram.mcphub.results import result_text

        text = " ".join(result_text(result).split())
        shown = text[:MAX_SHOWN_RESULT] + ("…" if len(text) > MAX_SHOWN_RESULT else "")
        status = "failed" if result.get("isError") else "returned"
        await ctx.show_message(f"{result['tool']} {status}: {shown or '(no text)'}")
        return result

    registry.register(
        "engram.mcp.suggest", SuggestArgs, mcp_suggest, summary="MCP tools for a selection"
    )
    registry.register(
        "engram.mcp.run", RunArgs, mcp_run, summary="run an MCP tool and show its result"
    )
    registry.add_action_provider(
        lambda ctx, file, selection: code_actions(cache, ctx, file, selection)
    )
    registry.add_closer(cache.close)
    return cache
