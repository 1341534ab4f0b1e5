"""A cloned repository's Python files never run in Engram's children (docs/security.md,
"Python children").

``python -m engram`` and ``python -c`` put the working directory first on ``sys.path``, and
Engram starts its children inside the repository: ``engram search`` in a clone with an
``engram/`` folder ran that folder's code in the engine it spawned (the lead's hostile
workspace walk, stop 27). Every child now starts with ``engram.interpreter.python_argv()``
(``-P``).
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.conftest import git

from engram import jobs
from engram.interpreter import python_argv
from engram.workspace import Workspace

PACKAGE = Path(__file__).resolve().parents[2] / "server" / "engram"


def _bait(marker: Path) -> str:
    return f"import pathlib\npathlib.Path({str(marker)!r}).write_text(__name__)\n"


@pytest.fixture
def baited(tmp_workspace: Workspace, tmp_path: Path) -> tuple[Workspace, Path]:
    """A workspace whose own ``engram/``, ``attrs.py`` and ``tree_sitter.py`` write MARKER
    when imported, with enough files for the index to use parse workers."""
    root, marker = tmp_workspace.root, tmp_path / "REPOSITORY-CODE-RAN"
    (root / "engram").mkdir()
    for name in ("engram/__init__.py", "engram/__main__.py", "attrs.py", "tree_sitter.py"):
        (root / name).write_text(_bait(marker))
    (root / "src").mkdir()
    for i in range(6):
        (root / "src" / f"m{i}.py").write_text(f"def f{i}():\n    return {i}\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "a clone")
    # the set-up is live: a plain `python -m engram` in the clone imports the bait
    subprocess.run([sys.executable, "-m", "engram", "--version"], cwd=root, capture_output=True)
    assert marker.exists(), "the bait did not run: the test would prove nothing"
    marker.unlink()
    return tmp_workspace, marker


def _env(runtime: Path, **more: str) -> dict[str, str]:
    env = {**os.environ, "ENGRAM_RUNTIME_DIR": str(runtime), "ENGRAM_EMBED__MODEL": "none"}
    env.update(more)
    return env


def _front_end(ws: Workspace, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI as the console script runs it: its own folder, not the clone, on sys.path."""
    return subprocess.run(
        [*python_argv(), "-m", "engram", *args, "--workspace", str(ws.root)],
        cwd=ws.root,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_the_engine_a_command_spawns_in_a_clone_never_imports_the_clones_code(
    baited: tuple[Workspace, Path], tmp_path: Path
) -> None:
    ws, marker = baited
    env = _env(tmp_path / "run", ENGRAM_ENGINE="on", ENGRAM_INDEX__EMBED_IN_BACKGROUND="false")
    (tmp_path / "run").mkdir()
    try:
        first = _front_end(ws, env, "remember", "--file", "src/m1.py", "f1 returns one")
        assert first.returncode == 0, first.stderr
        status = _front_end(ws, env, "status")
        assert "ready" in status.stdout, status.stdout + status.stderr  # an engine served
        assert not marker.exists(), f"the repository's {marker.read_text()} ran"
    finally:
        _front_end(ws, env, "stop")


def test_parse_workers_started_in_a_clone_never_import_the_clones_code(
    baited: tuple[Workspace, Path], tmp_path: Path
) -> None:
    ws, marker = baited
    env = _env(
        tmp_path / "run",
        ENGRAM_ENGINE="off",
        ENGRAM_INDEX__WORKERS="2",
        ENGRAM_INDEX__WORKERS_MIN_FILES="1",
    )
    run = _front_end(ws, env, "index", "--no-embed", "--json")
    assert run.returncode == 0, run.stderr
    assert '"workers": 2' in run.stdout, run.stdout[:2000]
    assert not marker.exists(), f"the repository's {marker.read_text()} ran"


def test_a_background_job_started_in_a_clone_never_imports_the_clones_code(
    baited: tuple[Workspace, Path],
) -> None:
    ws, marker = baited
    child = jobs.start(ws, "probe", ["--version"], log_name="probe.log")
    assert child is not None
    assert child.wait(timeout=120) == 0, (ws.engram_dir / "logs" / "probe.log").read_text()
    time.sleep(0.1)
    assert not marker.exists(), f"the repository's {marker.read_text()} ran"


def test_no_module_starts_the_interpreter_without_python_argv() -> None:
    """Every ``sys.executable`` in a command line goes through :func:`python_argv`: a new
    spawn site that forgets ``-P`` fails here, not in a user's clone."""
    allowed = {"interpreter.py", "doctor.py", "setup.py"}  # the flag, a display, a path kept
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        if path.name in allowed:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Attribute)
                and node.attr == "executable"
                and isinstance(node.value, ast.Name)
                and node.value.id == "sys"
            ):
                offenders.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert offenders == []
