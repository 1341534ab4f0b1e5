"""How a use case is declared once for every front end (docs/architecture.md, "api").

A declaration is a :class:`UseCase`: a name, a one-line summary, an attrs class of typed
arguments whose fields carry their limits (:func:`spec` metadata), the function that runs
it on an :class:`~engram.app.Engine`, and the two renderings of its result (JSON for
programs, text for people). The CLI subcommands, the LSP ``workspace/executeCommand``
commands and the MCP tools are built from these declarations (``engram.cli``,
``engram.lsp.commands``, ``engram.mcp_server``); so are ``docs/commands.md`` and the CLI
reference (``engram.cli.docs``). A surface never re-lists a limit, a default or a choice.

Arguments are checked in one place, :func:`structure`: strings never pass as lists (nor
lists as strings), NUL bytes and text that is not valid UTF-8 are refused with one line,
numbers are range-checked, enum values must be one of the enum's, unknown keys are refused
and an error quotes at most :data:`EXCERPT_CHARS` characters of what it got.

Long on purpose: the declaration types and the one argument checker they feed are one
contract; every front end reads both, and a limit is checked where it is declared.
"""

from __future__ import annotations

import enum
import re
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Generic, TypeVar

import attrs

from engram.errors import InvalidInput
from engram.jsontypes import JsonObject, JsonValue

if TYPE_CHECKING:
    from engram.app import Engine
    from engram.model import Memory


A = TypeVar("A")
R = TypeVar("R")

#: The longest excerpt of a bad value an error message quotes.
EXCERPT_CHARS = 40
#: Hard cap on any one text argument (the memory text has its own, configurable limit:
#: ``safety.max_content_chars``, checked by the remember use case).
MAX_TEXT_CHARS = 1_000_000
#: Hard cap on the items of any list argument.
MAX_LIST_ITEMS = 1000
#: Hard cap on one item of a list argument (a tag, a file path, a memory id).
MAX_ITEM_CHARS = 4096
#: Hard cap on a workspace path argument (PATH_MAX on Linux).
MAX_PATH_CHARS = 4096
#: Hard cap on a JSON object argument (an agent's event, ``extra``): characters of all its
#: keys and strings together, and values in all.
MAX_OBJECT_CHARS = 1_000_000
MAX_OBJECT_VALUES = 10_000

_META = "engram.api"


class Surface(enum.StrEnum):
    """The front ends a use case is offered on."""

    CLI = "cli"
    LSP = "lsp"
    MCP = "mcp"


ALL_SURFACES = frozenset(Surface)


class Kind(enum.Enum):
    """What a parameter holds, derived from its annotation."""

    TEXT = "string"
    INT = "integer"
    FLOAT = "number"
    BOOL = "boolean"
    ENUM = "enum"
    TEXT_LIST = "list of strings"
    ENUM_LIST = "list of enum values"
    OBJECT = "object"


@attrs.frozen
class ParamSpec:
    """Limits and spellings of one argument (attached to its attrs field by :func:`spec`)."""

    help: str
    ge: float | None = None
    le: float | None = None
    #: characters for text, items for lists
    max_length: int | None = None
    #: a workspace path (relative or absolute; confined by the use case)
    path: bool = False
    #: names a stored memory (``engram.model.check_memory_id``; each item of a list)
    memory_id: bool = False
    #: other accepted names (LSP and MCP), e.g. ``content`` for ``text``
    aliases: tuple[str, ...] = ()
    #: a list parameter also accepts one value (wrapped into a list)
    one_or_many: bool = False
    #: the CLI spelling: flags (first is the long one); empty: positional
    cli_flags: tuple[str, ...] | None = None
    #: a CLI flag that sets this bool parameter to False (``--unpin`` for ``pinned``)
    cli_negate: str | None = None
    positional: bool = False
    metavar: str | None = None
    #: the surfaces that offer this parameter (default: every surface of the use case)
    surfaces: frozenset[Surface] | None = None
    #: what the default means when it is not a literal (``"retrieval.default_budget_tokens"``)
    default_text: str | None = None
    #: ``-`` on the CLI reads the value from stdin
    stdin: bool = False


#: Offered on no surface: a value only a surface's ``fixed`` sets (an audit ``cause``).
HIDDEN: frozenset[Surface] = frozenset()


def spec(
    help: str,
    *,
    ge: float | None = None,
    le: float | None = None,
    max_length: int | None = None,
    path: bool = False,
    memory_id: bool = False,
    aliases: tuple[str, ...] = (),
    one_or_many: bool = False,
    cli: tuple[str, ...] | None = None,
    cli_negate: str | None = None,
    positional: bool = False,
    metavar: str | None = None,
    surfaces: frozenset[Surface] | None = None,
    default_text: str | None = None,
    stdin: bool = False,
) -> dict[str, ParamSpec]:
    """Field metadata for an argument: ``attrs.field(default=10, metadata=spec(...))``."""
    return {
        _META: ParamSpec(
            help=help,
            ge=ge,
            le=le,
            max_length=max_length,
            path=path,
            memory_id=memory_id,
            aliases=aliases,
            one_or_many=one_or_many,
            cli_flags=cli,
            cli_negate=cli_negate,
            positional=positional,
            metavar=metavar,
            surfaces=surfaces,
            default_text=default_text,
            stdin=stdin,
        )
    }


@attrs.frozen
class Param:
    """One argument of a use case, as every surface sees it."""

    name: str
    kind: Kind
    required: bool
    #: the default value (``None`` for required parameters and optional ones without one)
    default: object
    optional: bool
    spec: ParamSpec
    enum: type[enum.Enum] | None = None

    def offered_on(self, surface: Surface) -> bool:
        return self.spec.surfaces is None or surface in self.spec.surfaces

    @property
    def choices(self) -> tuple[str, ...]:
        return tuple(str(m.value) for m in self.enum) if self.enum is not None else ()

    def default_label(self) -> str:
        """The default as docs show it."""
        if self.spec.default_text:
            return self.spec.default_text
        if self.required:
            return "required"
        value = self.default
        if value is None:
            return "none"
        if isinstance(value, enum.Enum):
            return str(value.value)
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, list | tuple):
            return "[]" if not value else ", ".join(str(v) for v in value)
        return str(value)

    def limit_label(self) -> str:
        """The limits as docs show them (``1..50``, ``≤ 2000 chars``, one of …)."""
        parts: list[str] = []
        s = self.spec
        if s.ge is not None or s.le is not None:
            low = _num(s.ge) if s.ge is not None else ""
            high = _num(s.le) if s.le is not None else ""
            parts.append(f"{low}..{high}")
        if s.max_length is not None:
            unit = "items" if self.kind in (Kind.TEXT_LIST, Kind.ENUM_LIST) else "chars"
            parts.append(f"≤ {s.max_length} {unit}")
        return ", ".join(parts)


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


@attrs.frozen
class Spelling:
    """A surface's own way to give some arguments (declared here, next to them).

    ``--line 12-20`` on the CLI and ``line: 12`` over MCP are 1-based, as a person or a
    model reads a file; they set the 0-based ``start_line``/``end_line`` the use case takes.
    """

    name: str
    help: str
    surfaces: frozenset[Surface]
    #: the JSON kinds accepted (MCP schema; the CLI always passes a string)
    kinds: tuple[Kind, ...]
    apply: Callable[[object], Mapping[str, object]]
    cli_flags: tuple[str, ...] = ()
    positional: bool = False
    metavar: str | None = None
    required: bool = False


@attrs.frozen
class UseCase(Generic[A, R]):
    """One use case, declared once; see the module docstring."""

    name: str
    summary: str
    args: type[A]
    run: Callable[[Engine, A], R]
    to_json: Callable[[R], JsonObject]
    to_text: Callable[[R], str]
    surfaces: frozenset[Surface] = ALL_SURFACES
    #: lines for the person at the terminal (stderr) or the model (``note``)
    notes: Callable[[R], list[str]] = attrs.field(default=lambda _r: [])
    #: the CLI's exit status for a result (1: the request could not be done)
    exit_code: Callable[[R], int] = attrs.field(default=lambda _r: 0)
    #: checks (and adjustments) that need the engine, before running (``surface``: who
    #: asks); returns the arguments to run with
    prepare: Callable[[Engine, A, Surface], A] | None = None
    #: more words for a model choosing a tool (MCP description after the summary)
    guidance: str = ""
    #: the JSON result in one line, for the docs
    returns: str = ""
    #: argument values a surface fixes (an agent's memory is ``agent_explicit``)
    fixed: Mapping[Surface, Mapping[str, object]] = attrs.field(factory=dict)
    spellings: tuple[Spelling, ...] = ()
    #: names per surface (defaults: ``name``, ``engram.<camelName>``, ``engram_<name>``)
    cli_name: str | None = None
    lsp_name: str | None = None
    mcp_name: str | None = None
    #: the memories (or their ids) a result wrote, so editors republish what shows them;
    #: ``[]`` means "something changed, refresh everything", ``None`` "nothing changed"
    touched: Callable[[R], Sequence[Memory | str] | None] | None = None
    #: ids of the memories a result showed (the editor session's "applied" ledger)
    shown: Callable[[R], Sequence[str]] | None = None
    #: ids of memories a result learned (the editor session's "learned" ledger)
    learned: Callable[[R], Sequence[str]] | None = None
    #: ``(memory id, label)`` for the LSP session ledger's corrections (confirm, flag)
    corrected: Callable[[R], tuple[str, str]] | None = None
    #: which argument names a file that picks the workspace folder (multi-root LSP)
    folder_arg: str | None = "file"
    #: which argument names a memory whose folder runs it when no file picks one
    #: (multi-root LSP: a quick fix on the second folder's diagnostic sends only the id)
    memory_arg: str | None = "id"
    #: the engine may be opened read-only for it (nothing is written)
    read_only: bool = False
    #: over MCP the result is the text rendering alone, not JSON (a context pack: its
    #: budget is counted on exactly what the agent receives, docs/retrieval.md)
    mcp_text: bool = False

    @property
    def cli(self) -> str:
        return self.cli_name or self.name.replace("_", "-")

    @property
    def lsp(self) -> str:
        return self.lsp_name or "engram." + _camel(self.name)

    @property
    def mcp(self) -> str:
        return self.mcp_name or "engram_" + self.name

    def params(self, surface: Surface | None = None) -> list[Param]:
        """The arguments, in declaration order (those ``surface`` offers, when given)."""
        found = params_of(self.args)
        fixed = self.fixed.get(surface, {}) if surface is not None else {}
        return [
            p for p in found if (surface is None or p.offered_on(surface)) and p.name not in fixed
        ]

    def spellings_on(self, surface: Surface) -> list[Spelling]:
        return [s for s in self.spellings if surface in s.surfaces]

    def parse(self, raw: Mapping[str, object], surface: Surface) -> A:
        """``raw`` arguments from ``surface`` -> the typed arguments (or InvalidInput)."""
        return structure(self, raw, surface)

    def execute(self, engine: Engine, args: A, surface: Surface) -> R:
        """Check and run (what every front end calls, in a worker thread)."""
        if self.prepare is not None:
            args = self.prepare(engine, args, surface)
        return self.run(engine, args)

    def folder_file(self, args: A) -> str | None:
        if self.folder_arg is None:
            return None
        value = getattr(args, self.folder_arg, None)
        return value if isinstance(value, str) else None

    def memory_of(self, args: A) -> str | None:
        """The memory id that picks the folder, for a use case no file routes."""
        if self.memory_arg is None or self.folder_file(args) is not None:
            return None
        value = getattr(args, self.memory_arg, None)
        return value if isinstance(value, str) and value else None


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


_CAMEL = re.compile(r"(?<=[a-z0-9])([A-Z])")


def snake(key: str) -> str:
    """``startLine`` / ``start-line`` -> ``start_line``."""
    return _CAMEL.sub(r"_\1", key).replace("-", "_").lower()


# --------------------------------------------------------------------------- parameters


_PARAMS: dict[type, list[Param]] = {}


def params_of(cls: type) -> list[Param]:
    """The :class:`Param` of each field of an argument class (cached)."""
    cached = _PARAMS.get(cls)
    if cached is not None:
        return cached
    attrs.resolve_types(cls)
    out: list[Param] = []
    for field in attrs.fields(cls):
        meta = field.metadata.get(_META)
        if not isinstance(meta, ParamSpec):
            raise TypeError(f"{cls.__name__}.{field.name} has no spec(...) metadata")
        kind, optional, enum_cls = _kind_of(field.type, f"{cls.__name__}.{field.name}")
        default = field.default
        required = default is attrs.NOTHING
        if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
            default = default.factory()  # type: ignore[attr-defined]
        out.append(
            Param(
                name=field.name,
                kind=kind,
                required=required,
                default=None if required else default,
                optional=optional,
                spec=meta,
                enum=enum_cls,
            )
        )
    _PARAMS[cls] = out
    return out


def _kind_of(annotation: object, where: str) -> tuple[Kind, bool, type[enum.Enum] | None]:
    optional = False
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        rest = [a for a in args if a is not type(None)]
        optional = len(rest) < len(args)
        if len(rest) != 1:
            raise TypeError(f"{where}: unsupported annotation {annotation}")
        annotation = rest[0]
        args = typing.get_args(annotation)
    origin = typing.get_origin(annotation)
    if annotation is bool:
        return Kind.BOOL, optional, None
    if annotation is int:
        return Kind.INT, optional, None
    if annotation is float:
        return Kind.FLOAT, optional, None
    if annotation is str:
        return Kind.TEXT, optional, None
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return Kind.ENUM, optional, annotation
    if origin is list and len(args) == 1:
        item = args[0]
        if item is str:
            return Kind.TEXT_LIST, optional, None
        if isinstance(item, type) and issubclass(item, enum.Enum):
            return Kind.ENUM_LIST, optional, item
    if origin is dict:
        return Kind.OBJECT, optional, None
    raise TypeError(f"{where}: unsupported annotation {annotation}")


# --------------------------------------------------------------------------- validation


def excerpt(value: object) -> str:
    """A short quotation of a bad value for an error line."""
    text = value if isinstance(value, str) else repr(value)
    text = " ".join(text.split())
    if len(text) > EXCERPT_CHARS:
        text = text[: EXCERPT_CHARS - 1] + "…"
    return repr(text) if isinstance(value, str) else text


def _type_name(value: object) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    if value is None:
        return "null"
    return type(value).__name__


def check_memory_id(value: str, name: str) -> str:
    """A memory id (``engram.model.check_memory_id``): never a path, on every path in."""
    from engram.model import check_memory_id as valid_id

    try:
        return valid_id(value)
    except ValueError as exc:
        raise InvalidInput(f"{name}: {exc}") from exc


def check_text(value: object, name: str, max_length: int | None = None) -> str:
    """A string argument: no NUL bytes, valid UTF-8 (no lone surrogates), within length."""
    if not isinstance(value, str):
        raise InvalidInput(f"{name}: expected a string, got {_type_name(value)}")
    # the size first: the other checks then read at most the limit (C speed, not a loop)
    limit = min(max_length, MAX_TEXT_CHARS) if max_length is not None else MAX_TEXT_CHARS
    if len(value) > limit:
        raise InvalidInput(
            f"{name}: {len(value)} characters, over the limit of {limit} (starts {excerpt(value)})"
        )
    if "\x00" in value:
        raise InvalidInput(f"{name}: contains a NUL byte (binary data is not accepted)")
    if not value.isascii():
        try:
            value.encode("utf-8")  # lone surrogates: bytes that were not UTF-8 (argv, JSON)
        except UnicodeEncodeError:
            raise InvalidInput(f"{name}: is not valid UTF-8 text") from None
    return value


def _check_number(value: object, name: str, param: Param) -> int | float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        want = "an integer" if param.kind is Kind.INT else "a number"
        raise InvalidInput(f"{name}: expected {want}, got {_type_name(value)} {excerpt(value)}")
    if param.kind is Kind.INT and not isinstance(value, int):
        if not float(value).is_integer():
            raise InvalidInput(f"{name}: expected an integer, got {excerpt(value)}")
        value = int(value)
    low, high = param.spec.ge, param.spec.le
    if (low is not None and value < low) or (high is not None and value > high):
        bounds = (
            f"between {_num(low)} and {_num(high)}"
            if low is not None and high is not None
            else (f"at least {_num(low)}" if low is not None else f"at most {_num(high)}")  # type: ignore[arg-type]
        )
        raise InvalidInput(f"{name} must be {bounds}, got {excerpt(value)}")
    return float(value) if param.kind is Kind.FLOAT else value


def _check_enum(value: object, name: str, enum_cls: type[enum.Enum]) -> enum.Enum:
    if isinstance(value, enum_cls):
        return value
    if isinstance(value, str):
        check_text(value, name, 200)
        try:
            return enum_cls(value.strip().lower().replace("-", "_"))
        except ValueError:
            pass
    else:
        raise InvalidInput(f"{name}: expected a string, got {_type_name(value)}")
    valid = ", ".join(str(m.value) for m in enum_cls)
    label = ENUM_LABELS.get(enum_cls.__name__) or _CAMEL.sub(r" \1", enum_cls.__name__).lower()
    raise InvalidInput(f"unknown {label} {excerpt(value)}; valid values: {valid}")


#: How an error names an enum (``unknown memory type 'gotchaa'``).
ENUM_LABELS = {
    "MemoryType": "memory type",
    "MemorySource": "source",
    "MemoryScope": "scope",
    "UniversalPhase": "phase",
    "CorrectionKind": "correction kind",
    "ObservedBy": "observed_by value",
}


@attrs.define
class _Budget:
    """What is left of :data:`MAX_OBJECT_CHARS` / :data:`MAX_OBJECT_VALUES` for one object."""

    chars: int = MAX_OBJECT_CHARS
    values: int = MAX_OBJECT_VALUES

    def spend(self, name: str, chars: int) -> None:
        self.chars -= chars
        self.values -= 1
        if self.chars < 0 or self.values < 0:
            raise InvalidInput(
                f"{name}: over the limit of {MAX_OBJECT_CHARS} characters or "
                f"{MAX_OBJECT_VALUES} values for one object"
            )


def _check_object(value: object, name: str, budget: _Budget, depth: int = 0) -> object:
    if depth > 20:
        raise InvalidInput(f"{name}: nested too deeply")
    if isinstance(value, str):
        budget.spend(name, len(value))
        return check_text(value, name)
    if isinstance(value, dict):
        out: dict[str, object] = {}
        for k, v in value.items():
            key = check_text(k, f"{name} key", 200)
            budget.spend(name, len(key))
            out[key] = _check_object(v, name, budget, depth + 1)
        return out
    if isinstance(value, list):
        budget.spend(name, 0)
        return [_check_object(v, name, budget, depth + 1) for v in value]
    if value is None or isinstance(value, bool | int | float):
        budget.spend(name, 0)
        return value
    raise InvalidInput(f"{name}: not JSON data ({_type_name(value)})")


def check_value(param: Param, value: object) -> object:
    """One argument value, checked and converted (an enum name to the enum, …)."""
    name = param.name
    if value is None:
        if param.optional or (not param.required and param.default is None):
            return None
        raise InvalidInput(f"{name}: must not be null")
    kind = param.kind
    if kind is Kind.TEXT:
        text = check_text(value, name, param.spec.max_length or _default_length(param))
        return check_memory_id(text, name) if param.spec.memory_id else text
    if kind in (Kind.INT, Kind.FLOAT):
        return _check_number(value, name, param)
    if kind is Kind.BOOL:
        if not isinstance(value, bool):
            raise InvalidInput(f"{name}: expected true or false, got {excerpt(value)}")
        return value
    if kind is Kind.ENUM:
        assert param.enum is not None
        return _check_enum(value, name, param.enum)
    if kind in (Kind.TEXT_LIST, Kind.ENUM_LIST):
        if isinstance(value, str) and param.spec.one_or_many:
            value = [value]
        if not isinstance(value, list):
            raise InvalidInput(f"{name}: expected a list, got {_type_name(value)} {excerpt(value)}")
        limit = min(param.spec.max_length or MAX_LIST_ITEMS, MAX_LIST_ITEMS)
        if len(value) > limit:
            raise InvalidInput(f"{name}: {len(value)} items, over the limit of {limit}")
        if kind is Kind.TEXT_LIST:
            items = [check_text(v, f"{name}[{i}]", MAX_ITEM_CHARS) for i, v in enumerate(value)]
            if param.spec.memory_id:
                items = [check_memory_id(v, f"{name}[{i}]") for i, v in enumerate(items)]
            return items
        assert param.enum is not None
        return [_check_enum(v, f"{name}[{i}]", param.enum) for i, v in enumerate(value)]
    if kind is Kind.OBJECT:
        if not isinstance(value, dict):
            raise InvalidInput(f"{name}: expected a JSON object, got {_type_name(value)}")
        return _check_object(value, name, _Budget())
    raise AssertionError(kind)


def _default_length(param: Param) -> int:
    """The cap of a text argument that declares none (a path is at most a path)."""
    return MAX_PATH_CHARS if param.spec.path else MAX_TEXT_CHARS


def structure(usecase: UseCase[A, R], raw: Mapping[str, object], surface: Surface) -> A:
    """Raw arguments (JSON object, parsed CLI flags) -> the use case's typed arguments."""
    if not isinstance(raw, Mapping):
        raise InvalidInput("the arguments must be a JSON object")
    params = {p.name: p for p in usecase.params(surface)}
    names: dict[str, str] = {}
    for p in params.values():
        names[p.name] = p.name
        for alias in p.spec.aliases:
            names[alias] = p.name
    spellings = {s.name: s for s in usecase.spellings_on(surface)}
    given: dict[str, object] = {}
    for key, value in raw.items():
        if not isinstance(key, str):
            raise InvalidInput(f"argument names must be strings, got {excerpt(key)}")
        plain = snake(key)
        if plain in spellings:
            if value is None:
                continue
            for target, converted in spellings[plain].apply(value).items():
                if target in given:
                    raise InvalidInput(f"argument {target} given twice (by {plain})")
                given[target] = converted
            continue
        name = names.get(plain)
        if name is None:
            raise InvalidInput(f"unknown argument {excerpt(key)}")
        if name in given:
            raise InvalidInput(f"argument {name} given twice")
        given[name] = value
    values: dict[str, object] = dict(usecase.fixed.get(surface, {}))
    every = {p.name: p for p in usecase.params()}  # a spelling may set a hidden parameter
    for name, value in given.items():
        values[name] = check_value(params.get(name) or every[name], value)
    for name, param in params.items():
        if name not in given and param.required:
            raise InvalidInput(f"missing argument {name}")
    return usecase.args(**values)


def with_actor(args: A, label: str) -> A:
    """``args`` with the actor a surface knows only per session (an agent's LSP client,
    ``agent:lsp:<name>``), when the use case records who acts (docs/trust.md)."""
    if label and hasattr(args, "actor"):
        return attrs.evolve(args, actor=label)  # type: ignore[misc]
    return args


__all__ = [
    "ALL_SURFACES",
    "EXCERPT_CHARS",
    "HIDDEN",
    "MAX_ITEM_CHARS",
    "MAX_LIST_ITEMS",
    "MAX_OBJECT_CHARS",
    "MAX_OBJECT_VALUES",
    "MAX_PATH_CHARS",
    "MAX_TEXT_CHARS",
    "JsonObject",
    "JsonValue",
    "Kind",
    "Param",
    "ParamSpec",
    "Spelling",
    "Surface",
    "UseCase",
    "check_memory_id",
    "check_text",
    "check_value",
    "excerpt",
    "params_of",
    "snake",
    "spec",
    "structure",
    "with_actor",
]
