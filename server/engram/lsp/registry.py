"""The ``workspace/executeCommand`` registry: command name -> argument type + handler.

Every command takes zero or one JSON object as its ``arguments`` (``arguments: [{...}]``),
structured with cattrs into a small attrs class, so a bad argument is answered with a
JSON-RPC ``InvalidParams`` error carrying one line (``engram.search: query: expected a
string``), never a crash. Keys may be snake_case or camelCase; unknown keys are refused so
a typo does not silently do something else.

Other packages add their commands from their own module::

    # engram/mcp/lsp_commands.py
    def register_commands(registry: CommandRegistry) -> None:
        registry.register("engram.mcp.findTools", FindToolsArgs, find_tools,
                          summary="search tools across the user's MCP servers")

    async def find_tools(ctx: CommandContext, args: FindToolsArgs) -> JsonObject:
        return await ctx.call(lambda engine: ..., file=None)

and ``engram.lsp.features.create_server`` calls ``register_commands(registry)`` once at
start. Handlers receive a :class:`CommandContext`: the engine of
the workspace folder a file belongs to (waited for while it opens), a worker thread for
blocking calls, and a way to republish diagnostics after a write.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, ClassVar, NoReturn, Protocol, TypeVar, cast

import attrs
import cattrs

from engram.config import ConfigError
from engram.errors import EngramError, InvalidInput, NotFound
from engram.jsontypes import JsonObject
from engram.workspace import WorkspaceError

if TYPE_CHECKING:
    from engram.app import Engine
    from engram.codegraph import IndexReport
    from engram.config import EngramConfig
    from engram.daemon.calls import CallReply
    from engram.lifecycle.trust import Actor
    from engram.lsp.ledger import SessionLedger
    from engram.model import Memory
    from engram.workspace import Workspace

log = logging.getLogger(__name__)

T = TypeVar("T")
A = TypeVar("A")

#: JSON-RPC error codes (LSP): invalid params, and "request failed" for a user-facing
#: failure that is not the arguments' fault (store locked, capability not built).
INVALID_PARAMS = -32602
REQUEST_FAILED = -32803
INTERNAL_ERROR = -32603


class CommandError(Exception):
    """A command failed in a way the caller should see; ``code`` is the JSON-RPC code."""

    def __init__(self, message: str, code: int = INVALID_PARAMS) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


class CommandContext(Protocol):
    """What a command handler may use (implemented by ``engram.lsp.server``)."""

    async def call(self, fn: Callable[[Engine], T], file: str | None = None) -> T:
        """Run ``fn(engine)`` in a worker thread with the engine of ``file``'s folder."""
        ...

    async def folder_settings(self, file: str | None = None) -> tuple[Workspace, EngramConfig]:
        """The workspace and settings of ``file``'s folder, without opening an engine."""
        ...

    async def in_engine(
        self, usecase: str, raw: Mapping[str, object], file: str | None = None
    ) -> CallReply | None:
        """Run a declared use case in the workspace's warm engine, with this client's actor
        (``engram.daemon.calls``); ``None`` when the folder is not served by one (then the
        command runs in-process with :meth:`call`)."""
        ...

    async def memories(
        self, ids: Sequence[str], review: int, file: str | None = None
    ) -> tuple[dict[str, Memory], list[Memory]]:
        """Memories by id, and up to ``review`` waiting for review (from the engine when it
        serves the folder)."""
        ...

    async def memories_changed(self, memories: Sequence[Memory], file: str | None = None) -> None:
        """Refresh caches and republish diagnostics of open documents these touch."""
        ...

    def folder_of_memory(self, memory_id: str) -> str | None:
        """The root of the folder whose store holds ``memory_id`` when several folders are
        open (``None``: one folder, or no folder holds it)."""
        ...

    def actor(self) -> Actor | None:
        """Who a write speaks for: ``None`` for the person at an editor (the app names them
        from git), an agent when the client is one (docs/trust.md "Agents are not people")."""
        ...

    def session(self, file: str | None = None) -> SessionLedger:
        """This server session's ledger (applied / learned / corrected memory ids)."""
        ...

    def status(self, file: str | None = None) -> JsonObject:
        """Readiness of the folder: ``{"ready": bool, "indexing": str | None}``."""
        ...

    async def reindex(
        self, files: Sequence[str] | None, file: str | None = None
    ) -> IndexReport | JsonObject:
        """Re-index the code graph (all, or the given files) with progress."""
        ...

    async def show_document(self, path: str, line: int, file: str | None = None) -> bool:
        """Ask the client to open ``path`` at ``line`` (``window/showDocument``)."""
        ...

    async def show_message(self, text: str) -> None:
        """Tell the user something (``window/showMessage``, information)."""
        ...


#: A command's handler with its argument type erased: the registry hands it only what
#: :meth:`CommandRegistry.structure` built for it (``arg_type`` or ``parse``), and returns
#: its result to the client as it is (pygls serialises it).
Handler = Callable[[CommandContext, object], Awaitable[object]]
#: ``(ctx, file, selection) -> [{title, command, arguments}]``: extra code actions an
#: extension offers for a selection (e.g. the MCP hub's matching tools).
ActionProvider = Callable[[CommandContext, str | None, str], Awaitable[list[JsonObject]]]
#: Called once at shutdown (e.g. to end MCP child processes).
Closer = Callable[[], Awaitable[None]]


@attrs.frozen
class CommandSpec:
    name: str
    arg_type: type[object] | None
    handler: Handler
    summary: str = ""
    #: the use case's own argument check (``engram.api``); ``None``: cattrs on ``arg_type``
    parse: Callable[[Mapping[str, object]], object] | None = None
    #: accepted synonyms -> field names (an :class:`Args` class's ``ALIASES``)
    aliases: Mapping[str, str] = attrs.field(factory=dict)


_CAMEL = re.compile(r"(?<=[a-z0-9])([A-Z])")


def _snake(key: str) -> str:
    return _CAMEL.sub(r"_\1", key).replace("-", "_").lower()


def _strict(kind: type[object], name: str) -> Callable[[object, object], object]:
    def structure(value: object, _type: object) -> object:
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        if kind is not bool and isinstance(value, bool):
            raise ValueError(f"expected {name}, got a boolean")
        if not isinstance(value, kind):
            raise ValueError(f"expected {name}, got {type(value).__name__}")
        return value

    return structure


#: The size limits every command argument gets (docs/security.md "Robust inputs"): a
#: client is a local process, but it may be an agent relaying a repository's text, and one
#: oversized field must neither be stored nor make the server spin. Memory text has its own,
#: smaller limit (``safety.max_content_chars``) checked by the use case.
MAX_STRING_CHARS = 100_000
MAX_LIST_ITEMS = 10_000
#: At most this much of an error message goes back to the client (never the whole input).
MAX_MESSAGE_CHARS = 300


def _text(value: object, _type: object) -> str:
    if isinstance(value, bool) or not isinstance(value, str):
        raise ValueError(f"expected a string, got {type(value).__name__}")
    if len(value) > MAX_STRING_CHARS:
        raise ValueError(f"{len(value)} characters, over the limit of {MAX_STRING_CHARS}")
    if "\x00" in value:
        raise ValueError("contains a NUL byte")
    return value


def _is_list_of(hint: object) -> bool:
    import typing

    return typing.get_origin(hint) in (list, Sequence) and len(typing.get_args(hint)) == 1


def _list_hook(conv: cattrs.Converter) -> Callable[[object], Callable[[object, object], object]]:
    """``list[X]`` that refuses a string (cattrs would split it into characters) and caps
    the number of items."""
    import typing

    def factory(hint: object) -> Callable[[object, object], object]:
        (item,) = typing.get_args(hint)

        def structure(value: object, _type: object) -> list[object]:
            if not isinstance(value, list | tuple):
                raise ValueError(f"expected a list, got {type(value).__name__}")
            if len(value) > MAX_LIST_ITEMS:
                raise ValueError(f"{len(value)} items, over the limit of {MAX_LIST_ITEMS}")
            return [conv.structure(v, item) for v in value]

        return structure

    return factory


def make_converter() -> cattrs.Converter:
    """cattrs that refuses unknown keys, does not coerce ``5`` into ``"5"`` nor a string
    into a list of characters, and holds every string and list to a size limit."""
    conv = cattrs.Converter(forbid_extra_keys=True)
    conv.register_structure_hook(str, _text)
    conv.register_structure_hook_factory(_is_list_of, _list_hook(conv))
    conv.register_structure_hook(int, _strict(int, "an integer"))
    conv.register_structure_hook(float, _strict(float, "a number"))
    conv.register_structure_hook(bool, _strict(bool, "true or false"))
    conv.register_structure_hook(
        dict, lambda v, _t: v if isinstance(v, dict) else _fail("expected a JSON object")
    )
    # ``object``: a value passed through as the client sent it (a tool's own arguments)
    conv.register_structure_hook_func(lambda t: t is object, lambda v, _t: v)
    return conv


def _fail(message: str) -> NoReturn:
    raise ValueError(message)


def _one_line(text: str) -> str:
    """One line of at most :data:`MAX_MESSAGE_CHARS`: an error quotes an excerpt only."""
    line = " ".join(str(text)[: MAX_MESSAGE_CHARS * 4].split())
    return line if len(line) <= MAX_MESSAGE_CHARS else line[: MAX_MESSAGE_CHARS - 1] + "…"


class CommandRegistry:
    """Command name -> :class:`CommandSpec`; validates arguments and maps errors."""

    def __init__(self) -> None:
        self._commands: dict[str, CommandSpec] = {}
        self._converter = make_converter()
        self.action_providers: list[ActionProvider] = []
        self.closers: list[Closer] = []

    def add_action_provider(self, provider: ActionProvider) -> None:
        """Offer extra code actions for selections (asked on every code-action request)."""
        self.action_providers.append(provider)

    def add_closer(self, closer: Closer) -> None:
        """Run ``closer`` at shutdown."""
        self.closers.append(closer)

    def register(
        self,
        name: str,
        arg_type: type[A] | None,
        handler: Callable[[CommandContext, A], Awaitable[object]],
        *,
        summary: str = "",
    ) -> None:
        """Add a command; a second registration of one name is a programming error."""
        if name in self._commands:
            raise ValueError(f"command {name} is registered twice")
        if arg_type is not None and not attrs.has(arg_type):
            raise TypeError(f"{name}: argument type must be an attrs class")
        aliases: Mapping[str, str] = (
            arg_type.ALIASES if arg_type is not None and issubclass(arg_type, Args) else {}
        )
        # erased to ``Handler``: structure() builds an ``arg_type`` for exactly this handler
        self._commands[name] = CommandSpec(
            name, arg_type, cast("Handler", handler), summary, aliases=aliases
        )

    def register_parsed(
        self,
        name: str,
        parse: Callable[[Mapping[str, object]], A],
        handler: Callable[[CommandContext, A], Awaitable[object]],
        *,
        summary: str = "",
    ) -> None:
        """Add a command whose arguments a declared use case checks (``engram.api``)."""
        if name in self._commands:
            raise ValueError(f"command {name} is registered twice")
        # erased to ``Handler``: structure() calls ``parse`` for exactly this handler
        self._commands[name] = CommandSpec(name, None, cast("Handler", handler), summary, parse)

    def names(self) -> list[str]:
        return sorted(self._commands)

    def get(self, name: str) -> CommandSpec | None:
        return self._commands.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._commands

    def structure(self, spec: CommandSpec, raw_args: Sequence[object] | None) -> object:
        """``arguments`` -> the command's argument object, or :class:`CommandError`."""
        args = list(raw_args or [])
        if len(args) > 1:
            raise CommandError(f"{spec.name}: expected one JSON object as argument")
        raw = args[0] if args else {}
        if raw is None:
            raw = {}
        if spec.parse is not None:
            if not isinstance(raw, Mapping):
                raise CommandError(f"{spec.name}: the argument must be a JSON object")
            try:
                return spec.parse(raw)
            except (InvalidInput, WorkspaceError, ConfigError) as exc:
                raise CommandError(f"{spec.name}: {_one_line(str(exc))}") from exc
        if spec.arg_type is None:
            if raw not in ({}, []):
                raise CommandError(f"{spec.name}: takes no arguments")
            return None
        if not isinstance(raw, Mapping):
            raise CommandError(f"{spec.name}: the argument must be a JSON object")
        normalised: dict[str, object] = {}
        for key, value in raw.items():
            name = _snake(str(key))
            name = spec.aliases.get(name, name)
            if name in normalised:
                raise CommandError(f"{spec.name}: argument {name} given twice")
            normalised[name] = value
        try:
            return self._converter.structure(normalised, spec.arg_type)
        except cattrs.BaseValidationError as exc:
            problems = "; ".join(describe_validation(exc))
            raise CommandError(f"{spec.name}: {_one_line(problems)}") from exc
        except (ValueError, TypeError) as exc:
            raise CommandError(f"{spec.name}: {_one_line(str(exc))}") from exc

    async def execute(
        self, ctx: CommandContext, name: str, raw_args: Sequence[object] | None
    ) -> object:
        """Validate and run; every failure becomes a :class:`CommandError`."""
        spec = self._commands.get(name)
        if spec is None:
            raise CommandError(f"unknown command {name}")
        args = self.structure(spec, raw_args)
        try:
            return await spec.handler(ctx, args)
        except CommandError:
            raise
        except (InvalidInput, NotFound, WorkspaceError, ConfigError) as exc:
            raise CommandError(f"{name}: {_one_line(str(exc))}", INVALID_PARAMS) from exc
        except EngramError as exc:
            raise CommandError(f"{name}: {_one_line(str(exc))}", REQUEST_FAILED) from exc
        except Exception as exc:
            log.exception("command %s failed", name)
            text = _one_line(str(exc)) or type(exc).__name__
            raise CommandError(f"{name} failed: {text}", INTERNAL_ERROR) from exc


def describe_validation(exc: BaseException, path: str = "") -> list[str]:
    """cattrs' nested validation errors as ``field: what is wrong`` lines."""
    if isinstance(exc, cattrs.ForbiddenExtraKeysError):
        keys = ", ".join(sorted(exc.extra_fields))
        return [f"unknown argument {keys}"]
    if isinstance(exc, cattrs.ClassValidationError | cattrs.IterableValidationError):
        out: list[str] = []
        with_notes, others = exc.group_exceptions()
        for sub, note in with_notes:
            name = getattr(note, "name", None)
            index = getattr(note, "index", None)
            if name is not None:
                where = f"{path}.{name}" if path else str(name)
            else:
                where = f"{path}[{index}]"
            out += describe_validation(sub, where)
        for sub in others:
            out += describe_validation(sub, path)
        return out
    if isinstance(exc, KeyError):
        return [f"missing argument {path}"]
    if isinstance(exc, cattrs.BaseValidationError):
        return [f"{path}: {sub}" for sub in exc.exceptions]
    text = str(exc) or type(exc).__name__
    if isinstance(exc, TypeError | AttributeError):
        text = "wrong type"
    return [f"{path}: {text}" if path else text]


class Args:
    """Mixin for argument classes: ``ALIASES`` maps accepted synonyms to field names."""

    ALIASES: ClassVar[Mapping[str, str]] = {}
