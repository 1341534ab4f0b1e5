"""What ``engram serve`` imports before it answers ``initialize`` (docs/lsp.md, "Start-up").

The editor times ``initialize`` from the moment it spawns the server, so an editor's command
line skips argparse and the command tables (``engram.cli.serve.quick_args``), and the
server registers its commands by name from the generated table without importing the
use-case declarations, the redaction patterns or the rest of the lifecycle code. Module
sets and behaviour only: scripts/bench/frontends.py prints the ``initialize`` figures.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from engram.api import Surface, on
from engram.cli.serve import quick_args
from engram.lsp import create_server

#: Runs ``engram ARGV`` as the console script does and reports the modules held when the
#: server was about to read its first message (the ``initialize`` request).
PROBE = """
import json, sys
from pygls.lsp.server import LanguageServer
seen = []
def start_io(self, *args, **kwargs):
    seen.append(sorted(sys.modules))
    seen.append(sorted(self.protocol.fm.commands))
LanguageServer.start_io = start_io
from engram.cli.entry import main
code = main(json.loads(sys.argv[1]))
print(json.dumps({"code": code, "modules": seen[0], "commands": seen[1]}))
"""

#: Not imported before ``initialize`` is answered.
LATER = {
    "argparse",
    "secrets",
    "engram.cli.main",
    "engram.cli.parser",
    "engram.daemon.forward",
    "engram.redaction",
    "engram.lifecycle.dedup",
    "engram.lifecycle.portability",
    "engram.lifecycle.prune",
    "engram.lifecycle.redaction",
    "engram.lifecycle.trust",
    "lancedb",
    "pyarrow",
    "numpy",
    "onnxruntime",
    "tree_sitter",
}


def _env(home: object) -> dict[str, str]:
    env = {"ENGRAM_ENGINE": "off", "PATH": "/usr/bin:/bin", "HOME": str(home)}
    if os.environ.get("PYTHONPATH"):  # a worktree's checkout, not the installed one
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return env


def started(argv: list[str], tmp_path: object) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(argv)],
        cwd=str(tmp_path),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=_env(tmp_path),
    )
    assert done.returncode == 0, done.stderr
    found: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return found


@pytest.mark.parametrize(
    "argv",
    [
        ["serve"],
        ["serve", "--stdio"],
        ["serve", "--stdio", "--clientProcessId=4242"],
        ["serve", "--log-level", "error", "--workspace", "/tmp", "--clientProcessId", "1"],
    ],
)
def test_an_editors_serve_imports_neither_the_parser_nor_the_declarations(
    argv: list[str], tmp_path: object
) -> None:
    found = started(argv, tmp_path)
    modules = set(found["modules"])  # type: ignore[call-overload]
    assert not modules & LATER, sorted(modules & LATER)
    assert not {m for m in modules if m.startswith("engram.api.") and m != "engram.api.declare"}
    assert found["code"] == 0


def test_initialize_offers_every_declared_command_before_the_declarations_load(
    tmp_path: object,
) -> None:
    """The names come from the generated table; the declarations say the same."""
    found = started(["serve", "--stdio"], tmp_path)
    commands = set(found["commands"])  # type: ignore[call-overload]
    assert {u.lsp for u in on(Surface.LSP)} <= commands
    assert commands == set(create_server().protocol.fm.commands)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["serve"], {}),
        (["serve", "--stdio", "--clientProcessId=7"], {}),
        (["serve", "--log-level=debug", "-w", "ws"], {"log_level": "debug", "workspace": "ws"}),
        (["serve", "--workspace", "a", "--workspace", "b"], {"workspace": "b"}),
        (["serve", "--tcp", "127.0.0.1:2087"], None),  # the debugging transport: full parser
        (["serve", "--log-level", "loud"], None),  # the parser's own error message
        (["serve", "--log-level"], None),
        (["serve", "--workspace", "--stdio"], None),
        (["serve", "--help"], None),
        (["serve", "--work", "ws"], None),  # argparse's abbreviations: the parser decides
        (["--workspace", "ws", "serve"], None),
        (["search", "x"], None),
    ],
)
def test_only_plain_editor_command_lines_skip_the_parser(
    argv: list[str], expected: dict[str, str] | None
) -> None:
    assert quick_args(argv) == expected


def test_a_command_line_the_quick_path_leaves_gets_the_parsers_error(tmp_path: object) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "engram", "serve", "--log-level", "loud"],
        cwd=str(tmp_path),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=_env(tmp_path),
    )
    assert done.returncode == 2
    assert "invalid choice: 'loud'" in done.stderr
