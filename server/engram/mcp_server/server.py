"""``engram mcp-serve``: Engram's use cases as MCP tools, for agents that do not speak LSP.

Agents (Claude Code, Codex, OpenCode, Crush, Copilot CLI) call MCP tools; none of them
calls ``workspace/executeCommand``. Every tool here is derived from a use-case declaration
(``engram.api``): its input schema comes from the declared arguments and limits, the
arguments are checked by the declaration (the same one-line errors as the CLI and the
language server), and the result is the declaration's JSON rendering, with the notes a
person would see on stderr under ``note``. Two more tools reach the user's other MCP
servers through the lazy hub (``engram.mcphub``).

Declared tools run in the workspace's warm engine process (``engram.daemon.calls``,
docs/engine.md), reached on the first tool call, so this process never loads LanceDB or
the model for them and sees every other front end's writes at once; only when the engine
cannot be reached is an engine opened here, on that first call (the MCP handshake stays
fast either way). Calls run in a worker thread so a slow search never stalls the stdio
loop. The hub tools run here, on the MCP servers this process starts, with the workspace's
settings read here (no engine needed) and what a tool result taught saved as the declared
``remember`` of an MCP client, marked ``observed_by: mcp_hub`` (docs/mcp-hub.md), through
the engine like every other tool.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
from collections.abc import AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING, TypeAlias

import attrs

from engram.api import Surface, UseCase, by_name, on
from engram.api.declare import JsonObject, JsonValue, Kind, Param, Spelling, check_text, excerpt
from engram.errors import USER_ERRORS, EngramError, InvalidInput
from engram.model import to_jsonable
from engram.workspace import Workspace, WorkspaceError

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext
    from mcp.server.lowlevel import Server
    from mcp_types import PaginatedRequestParams

    from engram.app import Engine
    from engram.daemon.calls import CallReply, EngineCalls
    from engram.mcphub import McpHub
    from engram.mcphub.results import ObservationDraft

log = logging.getLogger(__name__)

MCP = Surface.MCP
#: What the server's lifespan hands each request: nothing (the holders live in closures).
Lifespan: TypeAlias = dict[str, object]

INSTRUCTIONS = (
    "Engram remembers what was learned in this repository: gotchas, decisions, dead ends, "
    "error patterns and recipes, anchored to files and symbols. Before editing a file, call "
    "engram_context with the file to get what bites there. When you learn something a future "
    "session should know (a trap, a decision and its reason, an approach that failed), call "
    "engram_remember. Cite memories you relied on by their id, e.g. [Memory m-3f2a9c1e7b], and "
    "flag any that turned out wrong with engram_flag. To find a tool from the user's other MCP "
    "servers without loading them all, call engram_find_tools, then engram_call_tool."
)


# --------------------------------------------------------------------------- schemas


def _param_schema(param: Param) -> JsonObject:
    kind, spec = param.kind, param.spec
    schema: JsonObject
    if kind is Kind.TEXT:
        schema = {"type": "string"}
        if spec.max_length is not None:
            schema["maxLength"] = spec.max_length
    elif kind in (Kind.INT, Kind.FLOAT):
        schema = {"type": kind.value}
        if spec.ge is not None:
            schema["minimum"] = spec.ge
        if spec.le is not None:
            schema["maximum"] = spec.le
    elif kind is Kind.BOOL:
        schema = {"type": "boolean"}
    elif kind is Kind.ENUM:
        schema = {"type": "string", "enum": list(param.choices)}
    elif kind in (Kind.TEXT_LIST, Kind.ENUM_LIST):
        item: JsonObject = (
            {"type": "string", "enum": list(param.choices)}
            if kind is Kind.ENUM_LIST
            else {"type": "string"}
        )
        schema = {"type": "array", "items": item}
        if spec.max_length is not None:
            schema["maxItems"] = spec.max_length
    else:
        schema = {"type": "object"}
    schema["description"] = spec.help
    if not param.required and param.default is not None:
        schema["default"] = to_jsonable(param.default)
    return schema


def _spelling_schema(spelling: Spelling) -> JsonObject:
    types: list[JsonValue] = [k.value for k in spelling.kinds]
    return {"type": types if len(types) > 1 else types[0], "description": spelling.help}


def input_schema(usecase: UseCase[object, object]) -> JsonObject:
    """The JSON Schema of a use case's MCP arguments, from its declaration."""
    properties: dict[str, object] = {}
    required: list[JsonValue] = []
    for param in usecase.params(MCP):
        properties[param.name] = _param_schema(param)
        if param.required:
            required.append(param.name)
    for spelling in usecase.spellings_on(MCP):
        properties[spelling.name] = _spelling_schema(spelling)
    schema: JsonObject = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


def description(usecase: UseCase[object, object]) -> str:
    summary = usecase.summary[0].upper() + usecase.summary[1:]
    return f"{summary}. {usecase.guidance}".strip()


# --------------------------------------------------------------------------- holders


class EngineHolder:
    """Opens the engine once, on first use, from whichever thread asks first."""

    def __init__(self, workspace: str | None, overrides: dict[str, object] | None = None) -> None:
        self._workspace = workspace
        self._overrides = overrides
        self._engine: Engine | None = None
        self._lock = threading.Lock()

    def get(self) -> Engine:
        if self._engine is None:
            with self._lock:
                if self._engine is None:
                    from engram.app import Engine

                    self._engine = Engine.open(self._workspace, self._overrides)
        return self._engine

    def close(self) -> None:
        if self._engine is not None:
            self._engine.close()


class HubHolder:
    """The lazy MCP hub of this server process, created on first use and closed at exit.

    The hub needs the workspace's settings (``[mcp]``, read by ``engram.config`` as far as
    the user approved them, the same function the engine reads them with) and a place to
    save what a tool result taught (``save``): neither needs an engine in this process,
    so a hub tool loads no LanceDB and no model (docs/engine.md, "Front ends"). The
    downstream servers stay children of this process, started with its environment (the
    agent's, which ``${VAR}`` in their configs expands from).
    """

    def __init__(
        self,
        workspace: str | None,
        overrides: dict[str, object] | None,
        save: Callable[[ObservationDraft], object],
    ) -> None:
        self._workspace = workspace
        self._overrides = overrides
        self._save = save
        self.hub: McpHub | None = None

    async def get(self) -> McpHub:
        if self.hub is None:
            from engram.config import load_settings
            from engram.mcphub import McpHub

            workspace = Workspace.open(self._workspace)
            config = load_settings(workspace, self._overrides).config
            self.hub = McpHub(workspace, config, memory_sink=self._save)
        return self.hub

    async def close(self) -> None:
        if self.hub is not None:
            await self.hub.close()
            self.hub = None


# --------------------------------------------------------------------------- the hub tools

FIND_TOOLS_SCHEMA: JsonObject = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "What you want to do"},
        "file": {"type": "string", "description": "The file you are working on"},
        "k": {"type": "integer", "minimum": 1, "maximum": 50, "default": 8},
    },
    "required": ["query"],
}
CALL_TOOL_SCHEMA: JsonObject = {
    "type": "object",
    "properties": {
        "tool": {"type": "string", "description": "Qualified tool name: server/tool"},
        "arguments": {"type": "object", "description": "Tool arguments"},
        "file": {"type": "string", "description": "The file you are working on"},
    },
    "required": ["tool"],
}
HUB_TOOLS: dict[str, tuple[str, JsonObject]] = {
    "engram_find_tools": (
        "Find the few tools, among all MCP servers the user configured, that fit what you "
        "need now (by words and by the file you work on). Returns names and input schemas; "
        "then call one with engram_call_tool. Servers are only started when called.",
        FIND_TOOLS_SCHEMA,
    ),
    "engram_call_tool": (
        "Call a tool found with engram_find_tools, by its qualified name 'server/tool', with "
        "arguments matching its input schema. Engram starts the server on demand.",
        CALL_TOOL_SCHEMA,
    ),
}


def _hub_args(name: str, raw: Mapping[str, object]) -> dict[str, object]:
    """The hub tools' arguments, checked like the declared ones."""
    properties = HUB_TOOLS[name][1]["properties"]
    known = set(properties) if isinstance(properties, dict) else set()
    for key in raw:
        if key not in known:
            raise InvalidInput(f"unknown argument {excerpt(key)}")
    out: dict[str, object] = {}
    for key in ("query", "tool", "file"):
        if raw.get(key) is not None:
            out[key] = check_text(raw[key], key, 2000)
    if name == "engram_find_tools":
        if "query" not in out:
            raise InvalidInput("missing argument query")
        k = raw.get("k", 8)
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 50:
            raise InvalidInput(f"k must be between 1 and 50, got {excerpt(k)}")
        out["k"] = k
    else:
        if "tool" not in out:
            raise InvalidInput("missing argument tool")
        arguments = raw.get("arguments") or {}
        if not isinstance(arguments, dict):
            raise InvalidInput("arguments: expected a JSON object")
        out["arguments"] = arguments
    return out


async def _run_hub_tool(hub: McpHub, name: str, args: dict[str, object]) -> JsonObject:
    file = args.get("file")
    file = file if isinstance(file, str) else None
    if name == "engram_find_tools":
        query, k = str(args["query"]), int(args["k"])  # type: ignore[call-overload]
        found = await hub.search(query, file=file, k=k)
        notes = found.get("notes")
        if isinstance(notes, list) and any("not cached" in str(n) for n in notes):
            # first use: the one-time introspection of trusted servers, then search again
            await hub.refresh()
            found = await hub.search(query, file=file, k=k)
        out = to_jsonable(found)
    else:
        arguments = args["arguments"]
        assert isinstance(arguments, dict)
        out = to_jsonable(await hub.call(str(args["tool"]), arguments, file=file))
    return dict(out) if isinstance(out, dict) else {"result": out}


# --------------------------------------------------------------------------- the server


def fence_team_memories(data: JsonObject) -> JsonObject:
    """A teammate's memory reaches the model as quoted data, with who shared it
    (docs/security.md): every memory record in a result (``memory_json``, with ``extra.team``)
    gets its ``content`` fenced by ``engram.quoting`` and a ``shared_by`` line (a search hit
    is such a record), and so does a record that carries such a memory's text beside a
    nested ``memory``."""
    from engram.quoting import quote_shared, shared_label

    def team_of(record: dict[str, object]) -> tuple[dict[str, object], dict[str, object]] | None:
        """(the team origin, the memory record holding it) of ``record`` or its ``memory``."""
        for holder in (record, record.get("memory")):
            if isinstance(holder, dict):
                extra = holder.get("extra")
                team = extra.get("team") if isinstance(extra, dict) else None
                if isinstance(team, dict):
                    return team, holder
        return None

    def walk(value: object) -> object:
        if isinstance(value, list):
            return [walk(v) for v in value]
        if not isinstance(value, dict):
            return value
        out = {k: walk(v) for k, v in value.items()}
        origin = team_of(out)
        content = out.get("content")
        if origin is not None and isinstance(content, str):
            team, memory = origin
            by = team.get("by") or "the team"
            named = team.get("file")
            file = named if isinstance(named, str) else None
            reviewed = bool(memory.get("user_verified"))
            out["content"] = quote_shared(content, by, file, reviewed=reviewed)
            out["shared_by"] = shared_label(by, file, reviewed=reviewed)
        return out

    fenced = walk(data)
    return fenced if isinstance(fenced, dict) else data


@attrs.define
class CallerSession:
    """The observer session of the agent at the other end of this stdio connection (one
    client per server process): the last ``session_id`` it sent with an event or a memory.
    ``engram_session_summary`` without an id answers for it, never for another client's
    session (issue 16: it returned the last editor session)."""

    session_id: str | None = None

    def note(self, usecase: str, args: object, result: object) -> None:
        """``result``: the use case's result, or its JSON rendering (run by the engine)."""
        answered = result.get("session_id") if isinstance(result, dict) else None
        given = answered or getattr(result, "session_id", None) or getattr(args, "session_id", None)
        if usecase in ("observe", "remember") and isinstance(given, str) and given:
            self.session_id = given

    def fill(self, usecase: str, args: object) -> object:
        if usecase == "session_summary" and getattr(args, "session_id", None) is None:
            return attrs.evolve(args, session_id=self.session_id)  # type: ignore[misc]
        return args


NO_SESSION: JsonObject = {
    "found": False,
    "session_id": None,
    "text": "no session of yours yet: send events with engram_observe (or pass session_id)",
}


def _engine_calls(workspace: str | None) -> EngineCalls | None:
    """The connection that runs declared tools in the workspace's engine, opened on the
    first tool call; ``None`` when the engine is off or the workspace is unknown."""
    from engram.daemon.client import engine_enabled

    if not engine_enabled():
        return None
    try:
        root = Workspace.open(workspace).root
    except EngramError as exc:
        log.info("no workspace engine: %s", exc)
        return None
    from engram.daemon.calls import EngineCalls

    return EngineCalls(root, "mcp")


def _filled(raw: Mapping[str, object], usecase: str, parsed: object) -> dict[str, object]:
    """The raw arguments the engine checks again, with what this server filled in (the
    caller's own observer session for ``engram_session_summary``)."""
    out = dict(raw)
    session_id = getattr(parsed, "session_id", None)
    if usecase == "session_summary" and isinstance(session_id, str) and "session_id" not in out:
        out["session_id"] = session_id
    return out


#: The longest error line a tool result carries (as the language server's, docs/security.md).
MAX_ERROR_CHARS = 300


class SetUpCheck:
    """Whether the workspace is set up (``Workspace.is_set_up``: ``.engram/`` or
    ``.engram-team/``), asked at every tool call until it is (docs/agents.md, "Which
    repositories an agent's session writes to"): an agent works in any repository, and
    neither the plugin nor a repository's own config is the person asking for memory in
    this one. The first tool call made ``.engram/`` wherever an agent worked."""

    def __init__(self, workspace: str | None) -> None:
        self._workspace = workspace
        self._set_up = False

    def refusal(self) -> EngramError | None:
        """The one line every tool answers in a repository nobody set up, else None."""
        if self._set_up:
            return None
        try:
            ws = Workspace.open(self._workspace)
        except (EngramError, WorkspaceError, OSError):
            return None  # the tool itself says what is wrong with the workspace
        if ws.is_set_up:
            self._set_up = True
            return None
        return EngramError(
            f"Engram is not set up in {ws.root}: nothing is read or written there until the "
            "person runs `engram index` in it once (an agent's session sets nothing up)"
        )


def build_server(
    workspace: str | None = None, overrides: dict[str, object] | None = None
) -> Server[Lifespan]:
    """The MCP server with Engram's tools; ``workspace`` defaults to the enclosing git root."""
    import anyio
    import mcp_types as types
    from mcp.server.lowlevel import Server

    from engram import __version__

    holder = EngineHolder(workspace, overrides)
    # the workspace's warm engine runs the declared tools (docs/engine.md); in-process
    # (``holder``) only when it cannot be reached. A test's overrides stay in-process.
    remote = _engine_calls(workspace) if overrides is None else None
    caller = CallerSession()
    usecases = {u.mcp: u for u in on(MCP)}
    remember = usecases["engram_remember"]

    def save_observation(draft: ObservationDraft) -> object:
        """A notable tool result, saved as the declared ``remember`` of an MCP client with
        ``observed_by: mcp_hub`` (the tool's word, not the agent's: ``mcp_auto``, 0.6, in
        review, by ``agent:mcp``), in the engine when it answers, else here: the engine
        checks the same arguments with the same declaration, so both record the same."""
        raw = draft.declared_args()
        if remote is not None:
            reply = remote.call(remember.name, MCP.value, raw)
            if reply is not None:
                return reply.json
        return remember.execute(holder.get(), remember.parse(raw, MCP), MCP)

    hubs = HubHolder(workspace, overrides, save_observation)
    set_up = SetUpCheck(workspace)
    team_read = threading.Event()
    team_reading = threading.Lock()

    def read_team_folder() -> None:
        """The team folder read into the store before the first tool's answer, as the
        language server does at start (``team.auto_sync``): in a teammate's fresh clone
        ``engram_context`` said "no memories yet" beside three shared ones, which only a
        manual ``engram sync`` brought in. Calls that come at once (an agent sends several)
        all wait for the one read: only the call that made it did, the others answered
        from a store without the team's memories."""
        if team_read.is_set():
            return
        with team_reading:
            if not team_read.is_set():
                _read_team_folder()
                team_read.set()

    def _read_team_folder() -> None:
        from engram.config import load_config

        sync = by_name("sync")
        try:
            ws = Workspace.open(workspace)
            team = load_config(ws, dict(overrides or {})).team
            if not team.auto_sync or not (ws.root / team.folder).is_dir():
                return
            if remote is not None and remote.call(sync.name, Surface.CLI.value, {}) is not None:
                return
            sync.execute(holder.get(), sync.parse({}, Surface.CLI), Surface.CLI)
        except Exception as exc:  # a bad team file is sync's to name, never a tool's failure
            log.warning("team sync at the first tool call failed: %s", exc)

    tools = [
        types.Tool(name=u.mcp, description=description(u), input_schema=input_schema(u))
        for u in usecases.values()
    ] + [
        types.Tool(name=name, description=text, input_schema=schema)
        for name, (text, schema) in HUB_TOOLS.items()
    ]

    @contextlib.asynccontextmanager
    async def lifespan(_server: Server[Lifespan]) -> AsyncIterator[Lifespan]:
        try:
            yield {}
        finally:
            await hubs.close()
            if remote is not None:
                remote.close()
            holder.close()

    async def list_tools(
        _ctx: ServerRequestContext[Lifespan], _params: PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    def answer(data: JsonObject, error: bool = False) -> types.CallToolResult:
        text = json.dumps(data, ensure_ascii=False, default=str)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)],
            structured_content=None if error else data,
            is_error=error,
        )

    def failure(exc: BaseException) -> types.CallToolResult:
        # one line of at most MAX_ERROR_CHARS: an error never echoes a large input back
        message = " ".join(str(exc)[: MAX_ERROR_CHARS * 4].split()) or type(exc).__name__
        if len(message) > MAX_ERROR_CHARS:
            message = message[: MAX_ERROR_CHARS - 1] + "…"
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=message)], is_error=True
        )

    async def call_tool(
        _ctx: ServerRequestContext[Lifespan], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        raw = params.arguments or {}
        try:
            refused = set_up.refusal()
            if refused is not None:
                return failure(refused)
            if params.name in HUB_TOOLS:
                args = _hub_args(params.name, raw)
                return answer(await _run_hub_tool(await hubs.get(), params.name, args))
            usecase = usecases.get(params.name)
            if usecase is None:
                raise InvalidInput(f"unknown tool {excerpt(params.name)}")
            await anyio.to_thread.run_sync(read_team_folder)
            parsed = caller.fill(usecase.name, usecase.parse(raw, MCP))
            if usecase.name == "session_summary" and getattr(parsed, "session_id", None) is None:
                return answer(NO_SESSION)
            reply: CallReply | None = None
            if remote is not None:
                sent = _filled(raw, usecase.name, parsed)
                reply = await anyio.to_thread.run_sync(
                    lambda: remote.call(usecase.name, MCP.value, sent)
                )
            if reply is not None:
                caller.note(usecase.name, parsed, reply.json)
                text, data, notes = reply.text, reply.json, reply.notes
            else:
                result = await anyio.to_thread.run_sync(
                    lambda: usecase.execute(holder.get(), parsed, MCP)
                )
                caller.note(usecase.name, parsed, result)
                text, data = usecase.to_text(result), usecase.to_json(result)
                notes = usecase.notes(result)
            if usecase.mcp_text:
                text = text or " ".join(notes)
                return types.CallToolResult(content=[types.TextContent(type="text", text=text)])
            out = fence_team_memories(data)
            if notes:
                out = {**out, "note": " ".join(notes)}
            return answer(out)
        except USER_ERRORS as exc:
            return failure(exc)
        except (ValueError, OSError) as exc:
            return failure(EngramError(f"{type(exc).__name__}: {exc}"))
        except Exception as exc:
            log.exception("tool %s failed", params.name)
            return failure(exc)

    server: Server[Lifespan] = Server(
        "engram",
        version=__version__,
        instructions=INSTRUCTIONS,
        lifespan=lifespan,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
    return server


def run_stdio(workspace: str | None = None) -> None:
    """Serve MCP over stdio until the client closes the connection."""
    import anyio
    from mcp.server.stdio import stdio_server

    if workspace is not None:
        Workspace.open(workspace)  # fail fast, with one clear line, on a bad --workspace
    server = build_server(workspace)

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)


__all__ = ["INSTRUCTIONS", "build_server", "description", "input_schema", "run_stdio"]
