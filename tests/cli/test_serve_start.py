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
from pathlib import Path

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


def probed(probe: str, tmp_path: object, *args: str, home: object = None) -> dict[str, object]:
    """Run a probe script in a fresh interpreter; its last line is a JSON object."""
    done = subprocess.run(
        [sys.executable, "-c", probe, *args],
        cwd=str(tmp_path),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=_env(home or tmp_path),
    )
    assert done.returncode == 0, done.stderr
    found: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return found


def started(argv: list[str], tmp_path: object) -> dict[str, object]:
    return probed(PROBE, tmp_path, json.dumps(argv))


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


#: As ``PROBE``, counting the method sources attrs compiles before ``initialize``.
COMPILES = """
import builtins, json, sys
import engram.lsp
compiled = []
real = builtins.compile
def counting(source, filename, *args, **kwargs):
    if str(filename).startswith("<attrs generated"):
        compiled.append(filename)
    return real(source, filename, *args, **kwargs)
builtins.compile = counting
engram.lsp.run_server = lambda *a, **k: None  # imported, not started
from engram.cli.entry import main
code = main(["serve", "--stdio"])
print(json.dumps({"code": code, "compiled": len(compiled)}))
"""


def test_a_second_start_compiles_no_attrs_method_the_first_compiled(tmp_path: Path) -> None:
    """``lsprotocol.types`` is some 600 attrs classes: compiling their generated methods
    was a third of the time to ``initialize`` at every start (engram.cli.attrs_code). The
    first start keeps the code in the user's cache; the next compiles only what is new
    (a frozen class's ``__hash__`` embeds the process's string hash)."""
    home = tmp_path / "home"
    home.mkdir()
    counts = [int(str(probed(COMPILES, tmp_path, home=home)["compiled"])) for _ in range(2)]
    first, second = counts
    assert first > 300, counts  # lsprotocol's classes, and the server's own
    print("attrs methods compiled before initialize, first and second start:", counts)
    assert second * 5 < first, counts
    from engram.cli.attrs_code import cache_file

    kept = cache_file({"HOME": str(home)})
    assert kept.is_file() and kept.is_relative_to(home / ".cache" / "engram")
    assert not kept.parent.stat().st_mode & 0o077  # the user's own


def test_cached_attrs_code_runs_as_compiled_and_a_foreign_file_is_ignored(
    tmp_path: Path,
) -> None:
    import attrs

    from engram.cli.attrs_code import attrs_code_cache

    where = tmp_path / "cache" / "codes.marshal"

    def define() -> type:
        @attrs.define
        class Point:
            x: int
            y: int = 0

        return Point

    with attrs_code_cache(where) as fresh:
        first = define()
    assert fresh and where.is_file()  # compiled, then kept
    with attrs_code_cache(where) as fresh:
        again = define()
    assert not fresh  # every method came from the file
    assert again(1, 2) == again(1, 2) != again(2)
    assert repr(again(3)) == repr(first(3)).replace(first.__qualname__, again.__qualname__)
    with pytest.raises(TypeError):
        again()  # the generated __init__'s own checks
    # a file someone else may write is not run
    where.chmod(0o666)
    with attrs_code_cache(where) as fresh:
        define()
    assert fresh


def test_an_attrs_whose_compile_helper_takes_other_arguments_is_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """attrs is unpinned (``>=24.2``): a release whose private ``_compile_and_eval`` takes
    other arguments must keep its own, or every ``engram serve`` start would fail."""
    import attr._make as make
    import attrs

    from engram.cli.attrs_code import attrs_code_cache

    calls: list[str] = []
    original = make._compile_and_eval

    def other_shape(script: str, globs: dict[str, object] | None, locs: object, name: str) -> None:
        calls.append(name)
        original(script, globs, locs, name)  # type: ignore[arg-type]

    monkeypatch.setattr(make, "_compile_and_eval", other_shape)
    where = tmp_path / "cache" / "codes.marshal"
    with attrs_code_cache(where) as fresh:
        assert make._compile_and_eval is other_shape

        @attrs.define
        class Point:
            x: int

    assert Point(1) == Point(1) and calls and not fresh and not where.exists()
