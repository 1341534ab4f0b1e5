"""CLI subcommands derived from the use-case declarations (``engram.api``).

Each declared CLI use case becomes ``engram <name>`` (listed from the generated
``engram.cli.declared_table``; :func:`add_arguments` fills its parser when the command is
chosen): its parameters become positionals and flags (spellings, help, choices and
defaults come from the declaration), every command gets ``--json``, and running it is
always the same: collect what was given, let the declaration check it (one line on
error), run it, print the text rendering on stdout (or the JSON one with ``--json``) and
the notes on stderr. docs/cli.md's reference is generated from the same declarations
(``engram.cli.docs``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from engram.api import Surface, UseCase
from engram.api.declare import Kind, Param, excerpt
from engram.errors import InvalidInput

if TYPE_CHECKING:
    from engram.api.declare import JsonObject

CLI = Surface.CLI
#: ``argparse`` dest of a declared command's use case.
USECASE_KEY = "_usecase"


def flags_of(param: Param) -> list[str]:
    """The CLI flags of a parameter (``--dry-run`` for ``dry_run`` unless declared)."""
    if param.spec.cli_flags is not None:
        return list(param.spec.cli_flags)
    return ["--" + param.name.replace("_", "-")]


def bool_sides(text: str) -> tuple[str, str | None]:
    """A boolean's help, ``"pin it (true) or unpin it (false)"`` (what JSON callers read),
    as its flag's help and its negation's: ``--review``'s said "only those that need review
    (true) or not (false)", which no flag on the command line can give."""
    head, sep, rest = text.partition(" (true) or ")
    if not sep or not rest.endswith(" (false)"):
        return text, None
    return head, rest.removesuffix(" (false)")


def _names_every(text: str, choices: list[str]) -> bool:
    """Whether the help already names each choice (``flag --kind`` explains each one)."""
    import re

    return all(re.search(rf"\b{re.escape(c)}\b", text) for c in choices)


def help_of(param: Param) -> str:
    text = param.spec.help
    if param.kind is Kind.BOOL:
        text = bool_sides(text)[0]
    if param.spec.stdin:
        text += "; '-' reads it from stdin"
    if param.choices and not _names_every(text, list(param.choices)):
        text += f" ({', '.join(param.choices)})"
    limit = param.limit_label()
    if limit:
        text += f" [{limit}]"
    if not param.required and param.kind is not Kind.BOOL:
        text += f" (default: {param.default_label()})"
    return text.replace("%", "%%")


def add_arguments(p: argparse.ArgumentParser, usecase: UseCase[object, object]) -> None:
    """The arguments of ``engram <usecase.cli>``: its spellings, its parameters, ``--json``."""
    p.set_defaults(**{USECASE_KEY: usecase.name})
    for spelling in usecase.spellings_on(CLI):
        if spelling.positional:
            p.add_argument(
                spelling.name,
                metavar=spelling.metavar,
                help=spelling.help,
                nargs=None if spelling.required else "?",
            )
        else:
            p.add_argument(
                *spelling.cli_flags,
                dest=spelling.name,
                metavar=spelling.metavar,
                help=spelling.help,
            )
    for param in usecase.params(CLI):
        _add_param(p, param)
    p.add_argument("--json", action="store_true", help="print one JSON document")


def _add_param(p: argparse.ArgumentParser, param: Param) -> None:
    kind, s = param.kind, param.spec
    listed = kind in (Kind.TEXT_LIST, Kind.ENUM_LIST)
    if s.positional:
        nargs: str | None = "*" if listed else (None if param.required else "?")
        p.add_argument(param.name, metavar=s.metavar, nargs=nargs, help=help_of(param))
        return
    if kind is Kind.BOOL:
        if s.cli_negate:
            p.add_argument(
                s.cli_negate,
                dest=param.name,
                action="store_false",
                default=None,
                help=bool_sides(s.help)[1] or f"the opposite of: {s.help}",
            )
        flags = flags_of(param)
        if flags:
            p.add_argument(
                *flags, dest=param.name, action="store_true", default=None, help=help_of(param)
            )
        return
    # a malformed number is a usage error (exit 2), as argparse says it
    number: dict[str, Callable[[str], float]] = (
        {"type": _number(kind)} if kind in (Kind.INT, Kind.FLOAT) else {}
    )
    p.add_argument(
        *flags_of(param),
        dest=param.name,
        metavar=s.metavar or param.name.upper(),
        action="append" if listed else "store",
        **number,  # type: ignore[arg-type]
        required=param.required,
        default=None,
        help=help_of(param),
    )


def _number(kind: Kind) -> Callable[[str], float]:
    """argparse's ``type=int``/``float``, but its error quotes a short excerpt only."""
    convert: Callable[[str], float] = int if kind is Kind.INT else float
    what = "int" if kind is Kind.INT else "float"

    def number(text: str) -> float:
        try:
            return convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid {what} value: {excerpt(text)}") from None

    return number


def raw_arguments(usecase: UseCase[object, object], args: argparse.Namespace) -> dict[str, object]:
    """What was given on the command line, as the declaration's raw arguments."""
    raw: dict[str, object] = {}
    for spelling in usecase.spellings_on(CLI):
        value = getattr(args, spelling.name, None)
        if value is not None:
            raw[spelling.name] = value
    for param in usecase.params(CLI):
        value = getattr(args, param.name, None)
        if value is None or (value == [] and param.kind in (Kind.TEXT_LIST, Kind.ENUM_LIST)):
            continue
        if param.kind is Kind.ENUM_LIST:  # --type a,b or --type a --type b
            value = [v.strip() for item in value for v in str(item).split(",") if v.strip()]
        elif param.spec.stdin and value == "-" and param.kind is Kind.TEXT:
            value = read_stdin_text(param.name)
        raw[param.name] = value
    return raw


def read_stdin_text(name: str) -> str:
    """``-`` for a text argument: the text comes from stdin (UTF-8, no NUL bytes)."""
    data = sys.stdin.buffer.read()
    if b"\x00" in data:
        raise InvalidInput(f"{name} on stdin looks binary (it contains NUL bytes)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{name} on stdin is not UTF-8 text") from exc


def cli_spelling(usecase: UseCase[object, object], message: str) -> str:
    """An argument error as the terminal spells it: ``--budget must …``, not ``budget_tokens``."""
    names: dict[str, str] = {}
    for param in usecase.params(CLI):
        if param.spec.positional:
            names[param.name] = param.spec.metavar or param.name.upper()
        elif flags := flags_of(param) or ([param.spec.cli_negate] if param.spec.cli_negate else []):
            names[param.name] = flags[0]
    for spelling in usecase.spellings_on(CLI):
        shown = spelling.metavar if spelling.positional else spelling.cli_flags[0]
        names[spelling.name] = shown or spelling.name
    head, sep, rest = message.partition(" ")
    key = head.rstrip(":")
    if key in names and (head.endswith(":") or rest.startswith(("must", "is"))):
        return f"{names[key]}{head[len(key) :]}{sep}{rest}"
    return message


def run(usecase: UseCase[object, object], args: argparse.Namespace) -> int:
    """Check, run, render; returns the exit status."""
    from engram.cli.output import emit_json, note, open_engine, terminal_text

    try:
        parsed = usecase.parse(raw_arguments(usecase, args), CLI)
    except InvalidInput as exc:
        raise InvalidInput(cli_spelling(usecase, str(exc))) from exc
    # the answer is printed before the engine closes: closing writes the uses a read
    # counted (``app.usage.PendingUses``), after the reply
    with open_engine(args, read_only=usecase.read_only) as engine:
        result = usecase.execute(engine, parsed, CLI)
        document: JsonObject | None = usecase.to_json(result) if args.json else None
        for line in usecase.notes(result):
            note(line)
        if document is not None:
            emit_json(document)
        else:
            text = usecase.to_text(result)
            if text:
                print(terminal_text(text))
        sys.stdout.flush()
    return usecase.exit_code(result)


__all__ = ["USECASE_KEY", "add_arguments", "flags_of", "help_of", "raw_arguments", "run"]
