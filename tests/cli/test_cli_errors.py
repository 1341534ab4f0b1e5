"""Every bad input ends as ONE line on stderr and a non-zero exit, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from engram.workspace import Workspace

from .conftest import ENGRAM, RunCli


def assert_one_line_error(run, *fragments: str) -> None:  # type: ignore[no-untyped-def]
    assert run.code != 0, run
    assert "Traceback" not in run.err
    lines = run.err_lines
    assert len(lines) == 1, lines
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    assert run.out == ""


def test_help_lists_every_command(cli_env) -> None:  # type: ignore[no-untyped-def]
    # its speed is printed by scripts/bench/cli_start.py (docs/cli.md), not judged here
    proc = subprocess.run([str(ENGRAM), "--help"], capture_output=True, text=True, env=cli_env)
    assert proc.returncode == 0
    for command in [
        "remember",
        "search",
        "list",
        "show",
        "forget",
        "confirm",
        "flag",
        "pin",
        "context",
        "index",
        "impact",
        "observe",
        "mcp",
        "serve",
        "mcp-serve",
        "doctor",
        "stats",
        "export",
        "import",
    ]:
        assert command in proc.stdout
    # a pipx user has no docs/ beside the command: the help says where the guides are
    assert "Docs: docs/cli.md" not in proc.stdout
    assert "in the Engram repository it was installed from" in proc.stdout


def test_help_imports_nothing_heavy() -> None:
    code = (
        "import sys, contextlib, io\n"
        "from engram.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n        main(['--help'])\n    except SystemExit:\n        pass\n"
        "heavy = [m for m in ('lancedb','pyarrow','fastembed','onnxruntime','tree_sitter',"
        "'pygls','mcp','numpy','rich','git') if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == ""


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["remember"], ["required", "TEXT"]),
        (["remember", "x", "--type"], ["expected one argument"]),
        (["frobnicate"], ["invalid choice", "'status', 'stop', 'completion')"]),
        # a new user's first guess (stop 31) got a list of forty command names
        (["init"], ["there is no 'engram init'", "'engram index' sets Engram up"]),
        (["flag", "m-1"], ["--kind"]),
        (["search", "q", "--k", "many"], ["invalid int value"]),
        (["export", "--format", "xml"], ["invalid choice"]),
    ],
)
def test_usage_errors(cli: RunCli, args: list[str], fragments: list[str]) -> None:
    run = cli(*args)
    assert run.code == 2
    assert_one_line_error(run, *fragments)


@pytest.mark.parametrize(
    ("args", "stdin", "fragments"),
    [
        (["remember", ""], None, ["memory text is empty"]),
        (["remember", "   "], None, ["memory text is empty"]),
        (["remember", "-"], b"ab\x00cd", ["binary"]),
        (["remember", "-"], b"\xff\xfe\xfd", ["not UTF-8"]),
        (["remember", "x", "--type", "gotchaa"], None, ["unknown memory type", "gotcha"]),
        (["remember", "x", "--source", "me"], None, ["unknown source", "user_taught"]),
        (["remember", "x", "--line", "0"], None, ["line numbers start at 1"]),
        (["remember", "x", "--line", "9-3"], None, ["backwards"]),
        (["remember", "x", "--line", "abc"], None, ["--line must be"]),
        (["remember", "x", "--symbol", "f"], None, ["needs a file"]),
        (["remember", "x", "--file", "/etc/passwd"], None, ["outside the workspace"]),
        (["context", "--budget", "0", "--query", "q"], None, ["--budget must be between 1"]),
        (["context", "--budget", "-5", "--query", "q"], None, ["--budget"]),
        (["context"], None, ["FILE or --query"]),
        (["context", "nope.py"], None, ["does not exist"]),
        (["impact", ""], None, ["no file given"]),
        (["context", "--query", "q", "--symbol", "f"], None, ["--symbol needs a FILE"]),
        (["impact", "."], None, [". is the workspace itself"]),
        (["context", "--query", "q", "--phase", "lunch"], None, ["unknown phase"]),
        (["import", "missing.json"], None, ["does not exist"]),
        (["search", "   "], None, ["empty"]),
        (["search", "q", "--k", "0"], None, ["k must be between"]),
        (["serve", "--tcp", "nonsense"], None, ["HOST:PORT"]),
        (["observe"], b"", ["no event on stdin"]),
        (["observe"], b"{not json\n", ["not JSON"]),
    ],
)
def test_user_errors_are_one_line(
    cli: RunCli, args: list[str], stdin: bytes | None, fragments: list[str]
) -> None:
    run = cli(*args, stdin=stdin)
    assert run.code == 1
    assert_one_line_error(run, *fragments)


def test_missing_workspace(cli: RunCli, tmp_path: Path) -> None:
    run = cli("list", "--workspace", str(tmp_path / "nowhere"))
    assert_one_line_error(run, "does not exist")
    run = cli("--workspace", str(tmp_path / "nowhere"), "stats")
    assert_one_line_error(run, "does not exist")
    afile = tmp_path / "file.txt"
    afile.write_text("x")
    assert_one_line_error(cli("stats", "--workspace", str(afile)), "not a directory")


def test_unreadable_import_file(cli: RunCli, tmp_workspace: Workspace) -> None:
    if os.geteuid() == 0:
        pytest.skip("root can read anything")
    path = tmp_workspace.root / "secret.json"
    path.write_text("{}")
    path.chmod(0)
    assert_one_line_error(cli("import", str(path)), "permission denied")


def test_import_directory_and_binary(cli: RunCli, tmp_workspace: Workspace) -> None:
    binary = tmp_workspace.root / "blob.bin"
    binary.write_bytes(b"\x00\x01\x02")
    assert_one_line_error(cli("import", str(binary)), "binary")
    assert_one_line_error(cli("import", str(tmp_workspace.root)), "directory")


def test_version(cli: RunCli) -> None:
    run = cli("--version")
    assert run.code == 0 and run.out.startswith("engram ")


def test_engram_dir_is_a_file(cli: RunCli, tmp_workspace: Workspace) -> None:
    (tmp_workspace.root / ".engram").write_text("not a directory")
    assert_one_line_error(cli("remember", "abc def"), ".engram is a file")
    assert_one_line_error(cli("stats"), ".engram is a file")
