"""argparse that fails in one line, subcommands built when chosen, and the CLI's exit codes.

docs/cli.md: a usage error is one line (exit 2); "Start-up": ``engram`` builds only the
parser of the command it runs (:class:`Subcommands`), because building all of them (some
forty parsers, the declared ones after importing ``engram.api``) cost every command line,
forwarded ones in the warm engine included, more than the work itself.
"""

from __future__ import annotations

import argparse
import re
import sys

#: ``typing`` is not otherwise imported on the way to ``engram --help``; mypy reads it anyway
TYPE_CHECKING = False
if TYPE_CHECKING:
    from _collections_abc import dict_items, dict_keys, dict_values
    from collections.abc import Callable, Iterator, Sequence
    from typing import NoReturn

#: Exit codes: 1 = the user's request failed, 2 = bad usage, 70 = internal error (EX_SOFTWARE),
#: 75 = busy, try again later (EX_TEMPFAIL: ``engram index --no-wait`` beside another index).
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 70
EXIT_BUSY = 75
EXIT_INTERRUPTED = 130


#: Commands a new user types to set a repository up; ``engram index`` is the one.
SET_UP_GUESSES = ("init", "start", "create", "new", "install")
#: Commands that ``--help`` does not list (the engine a front end starts: docs/engine.md),
#: left out of an invalid command's list of choices too
HIDDEN_COMMANDS = ("engine",)


def _without_hidden(message: str) -> str:
    """argparse's "(choose from 'a', 'b', …)" without the hidden commands."""
    for name in HIDDEN_COMMANDS:
        message = re.sub(rf", '?{re.escape(name)}'?(?=[,)])", "", message)
    return message


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line that points at ``--help``."""

    def error(self, message: str) -> NoReturn:
        top = " " not in self.prog  # not ``engram mcp``'s own COMMAND
        guess = next(
            (w for w in SET_UP_GUESSES if f"argument COMMAND: invalid choice: '{w}'" in message),
            None,
        )
        if not top:
            guess = None
        elif "argument COMMAND: invalid choice" in message:
            message = _without_hidden(message)
        if guess is not None:
            # a new user's first command: the answer was a list of forty names
            message = (
                f"there is no '{self.prog} {guess}': '{self.prog} index' sets Engram up in "
                "a repository (its .engram/, the code graph, the first memories)"
            )
        sys.stderr.write(f"{self.prog}: error: {message} (see '{self.prog} --help')\n")
        raise SystemExit(EXIT_USAGE)


class _Parsers(dict[str, OneLineParser]):
    """Subcommand name -> parser, where a parser is made the first time it is looked up.

    argparse checks the command with ``in`` and lists the names in an error by iterating:
    both see every name at once, in the order added. Anything that hands out a parser
    (``[]``, ``get``, ``values``, ``items``, ``keys``) makes it first, so argparse, shtab and
    the docs generator all see complete parsers.
    """

    def __init__(self) -> None:
        super().__init__()
        self._names: list[str] = []
        self._makers: dict[str, Callable[[], OneLineParser]] = {}

    def defer(self, name: str, make: Callable[[], OneLineParser]) -> None:
        self._names.append(name)
        self._makers[name] = make

    def __setitem__(self, name: str, parser: OneLineParser) -> None:
        if name not in self:
            self._names.append(name)
        self._makers.pop(name, None)
        super().__setitem__(name, parser)

    def __getitem__(self, name: str) -> OneLineParser:
        make = self._makers.pop(name, None)
        if make is not None:
            super().__setitem__(name, make())
        return super().__getitem__(name)

    def get(self, name: str, default: OneLineParser | None = None) -> OneLineParser | None:  # type: ignore[override]
        if name in self:
            return self[name]
        return default

    def __contains__(self, name: object) -> bool:
        return name in self._makers or super().__contains__(name)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._names))

    def __len__(self) -> int:
        return len(self._names)

    def built(self) -> list[str]:
        """The names whose parser is made, in the order the names were added."""
        return [name for name in self._names if name not in self._makers]

    def complete(self) -> None:
        """Make every parser still missing, keeping the order the names were added in."""
        if self._makers:
            made = {name: self[name] for name in self._names}
            super().clear()
            super().update(made)

    def keys(self) -> dict_keys[str, OneLineParser]:
        self.complete()
        return super().keys()

    def values(self) -> dict_values[str, OneLineParser]:
        self.complete()
        return super().values()

    def items(self) -> dict_items[str, OneLineParser]:
        self.complete()
        return super().items()


if TYPE_CHECKING:
    _SubParsers = argparse._SubParsersAction[OneLineParser]
else:  # not subscriptable at run time
    _SubParsers = argparse._SubParsersAction


class Subcommands(_SubParsers):
    """argparse's subcommands, with parsers that are built when first used.

    ``parser.add_subparsers(action=Subcommands, parser_class=OneLineParser)``, then
    :meth:`add_deferred` per command: its name and one-line help are listed at once (for
    ``engram --help`` and argparse's "invalid choice" error), its parser is made and filled
    by ``build`` only when argparse picks that command (or anything asks for the parser).
    """

    def __init__(
        self,
        option_strings: Sequence[str],
        prog: str,
        parser_class: type[OneLineParser],
        dest: str = argparse.SUPPRESS,
        required: bool = False,
        help: str | None = None,
        metavar: str | None = None,
    ) -> None:
        super().__init__(option_strings, prog, parser_class, dest, required, help, metavar)
        self.parsers = _Parsers()
        self._name_parser_map = self.parsers
        self.choices = self.parsers

    def add_deferred(
        self,
        name: str,
        build: Callable[[OneLineParser], None],
        *,
        help: str | None = None,
        description: str | None = None,
        add_help: bool = True,
        prefix_chars: str = "-",
    ) -> None:
        """Add command ``name``, listed with ``help`` (unlisted when ``None``)."""
        if name in self.parsers:
            raise argparse.ArgumentError(self, f"conflicting subparser: {name}")
        if help is not None:
            self._choices_actions.append(self._ChoicesPseudoAction(name, (), help))
        prog = f"{self._prog_prefix} {name}"

        def make() -> OneLineParser:
            parser = self._parser_class(
                prog=prog,
                description=description,
                add_help=add_help,
                prefix_chars=prefix_chars,
            )
            build(parser)
            return parser

        self.parsers.defer(name, make)

    def build_all(self) -> None:
        """Build every command's parser (completion scripts and docs need them all).

        Not named ``complete``: shtab reads an action's ``complete`` attribute as its
        completer."""
        self.parsers.complete()


__all__ = [
    "EXIT_ERROR",
    "EXIT_INTERNAL",
    "EXIT_INTERRUPTED",
    "EXIT_USAGE",
    "OneLineParser",
    "Subcommands",
]
