"""Help texts as a new user reads them (stop 31's walk through every ``--help``).

The declarations' help is written for JSON callers too (MCP, LSP); on the command line
``--review`` said "only those that need review (true) or not (false)", ``--unpin`` "the
opposite of: pin (true) or unpin (false)", ``flag --kind`` listed the four kinds again
right after ``not_useful`` as if that were its meaning, and the MCP tool
``engram_remember`` told agents that "'-' reads it from stdin (CLI)" (an agent sent "-"
and stored a memory whose whole text was "-").
"""

from __future__ import annotations

import pytest

from engram.api import by_name
from engram.cli.main import main
from engram.mcp_server.server import input_schema


def help_text(capsys: pytest.CaptureFixture[str], *command: str) -> str:
    with pytest.raises(SystemExit) as done:
        main([*command, "--help"])
    assert done.value.code == 0
    return " ".join(capsys.readouterr().out.split())


def test_boolean_flags_say_what_the_flag_does(capsys: pytest.CaptureFixture[str]) -> None:
    listing = help_text(capsys, "list")
    assert "--review only those that need review --all" in listing, listing
    pin = help_text(capsys, "pin")
    assert "--unpin unpin it" in pin and "(true)" not in pin and "opposite" not in pin, pin


def test_flag_kinds_are_explained_once(capsys: pytest.CaptureFixture[str]) -> None:
    flag = help_text(capsys, "flag")
    assert "not_useful (true, but no help here)" in flag, flag
    assert flag.count("wrong_scope") == 1, flag


def test_stdin_is_offered_on_the_command_line_only(capsys: pytest.CaptureFixture[str]) -> None:
    assert "'-' reads it from stdin" in help_text(capsys, "remember")
    remember = by_name("remember")
    schema = input_schema(remember)
    assert "stdin" not in str(schema["properties"]), schema
