"""What a command line builds and imports before it runs (docs/cli.md, "Start-up").

``engram --help`` lists the commands from the generated table without the use-case
declarations; a command line builds only its own parser and imports only the
``engram.api`` module that declares its use case, in a fresh process and in the engine
(which runs every forwarded command line with ``engram.cli.main.main``). Lazily built
parsers must say exactly what the fully built ones say. Behaviour only: the figures are
printed by scripts/bench/cli_start.py.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

import pytest

from engram.cli.main import build_parser
from engram.cli.parser import HIDDEN_COMMANDS, Subcommands

PROBE = """
import contextlib, io, json, sys
from engram.cli.main import build_parser, main
argv = json.loads(sys.argv[1])
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    if sys.argv[2] == "parse":
        build_parser(lazy=True).parse_args(argv)
    else:
        try:
            main(argv, try_engine=False)
        except SystemExit:
            pass
print(json.dumps(sorted(sys.modules)))
"""


def loaded(argv: list[str], how: str = "main") -> set[str]:
    """The modules a fresh interpreter holds after ``engram ARGV`` (or only its parse)."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(argv), how],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={"ENGRAM_ENGINE": "off", "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.splitlines()[-1]))


def api_modules(modules: set[str]) -> set[str]:
    return {m for m in modules if m.startswith("engram.api.") and m != "engram.api.declare"}


@pytest.mark.parametrize("argv", [["--help"], [], ["--version"], ["nosuch"], ["hook", "--help"]])
def test_listing_commands_imports_no_declaration(argv: list[str]) -> None:
    modules = loaded(argv)
    assert not {m for m in modules if m.startswith("engram.api")}, sorted(modules)
    assert not {"attr", "attrs", "cattrs", "engram.config", "engram.model"} & modules


@pytest.mark.parametrize(
    ("argv", "declared"),
    [
        (["search", "payment cents"], {"engram.api.memories", "engram.api.render"}),
        (["--workspace", "/tmp", "list", "--review"], {"engram.api.memories", "engram.api.render"}),
        (
            ["flag", "m-1", "--kind", "outdated"],
            {"engram.api.corrections", "engram.api.memories", "engram.api.render"},
        ),
        (["stats", "--json"], {"engram.api.workspace", "engram.api.render"}),
        (["status", "--json"], set()),
    ],
)
def test_a_command_imports_only_its_own_declarations(argv: list[str], declared: set[str]) -> None:
    """The forward path in the engine parses like this: only the chosen command's module."""
    modules = loaded(argv, "parse")
    assert api_modules(modules) == declared
    # nothing reads settings or decodes records to parse a command line
    assert not {"engram.config", "cattrs"} & modules


def test_search_help_imports_only_its_declarations() -> None:
    modules = loaded(["search", "--help"])
    assert api_modules(modules) == {"engram.api.memories", "engram.api.render"}
    assert not {"engram.config", "cattrs"} & modules


def _subcommands(parser: argparse.ArgumentParser) -> Subcommands:
    found = [a for a in parser._actions if isinstance(a, Subcommands)]
    assert len(found) == 1
    return found[0]


def test_a_lazy_parser_builds_only_the_chosen_command() -> None:
    parser = build_parser(lazy=True)
    args = parser.parse_args(["-V", "-w", "/tmp", "search", "--k", "3", "cents"])
    assert (args.command, args.k, args.query) == ("search", 3, "cents")
    assert _subcommands(parser).parsers.built() == ["search"]


def test_lazy_and_full_parsers_say_the_same() -> None:
    """Every command's help, the top-level help and the list of choices are unchanged."""
    lazy, full = build_parser(lazy=True), build_parser()
    assert lazy.format_help() == full.format_help()
    lazy_sub, full_sub = _subcommands(lazy), _subcommands(full)
    assert list(lazy_sub.choices or ()) == list(full_sub.choices or ())
    assert len(full_sub.parsers.built()) == len(list(full_sub.choices or ()))
    for name, command in full_sub.parsers.items():
        assert lazy_sub.parsers[name].format_help() == command.format_help(), name
    assert lazy_sub.parsers.built() == list(full_sub.parsers)


def test_an_unknown_command_lists_every_command_in_order(
    capsys: pytest.CaptureFixture[str],
) -> None:
    parser = build_parser(lazy=True)
    with pytest.raises(SystemExit) as exited:
        parser.parse_args(["nosuch"])
    assert exited.value.code == 2
    line = capsys.readouterr().err.strip()
    # the hidden engine (docs/engine.md) is left out, as from --help (e2da817)
    shown = [n for n in _subcommands(build_parser()).parsers if n not in HIDDEN_COMMANDS]
    names = ", ".join(repr(n) for n in shown)
    assert line == (
        f"engram: error: argument COMMAND: invalid choice: 'nosuch' (choose from {names}) "
        "(see 'engram --help')"
    )
    assert _subcommands(parser).parsers.built() == []
