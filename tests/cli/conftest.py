"""Run the real ``engram`` console script in a subprocess against a temp workspace."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import attrs
import pytest

from engram.workspace import Workspace


def engine_var(name: str) -> bool:
    """The suite's engine settings (tests/conftest.py) survive a clean environment."""
    return name.startswith(("ENGRAM_ENGINE", "ENGRAM_RUNTIME_DIR"))


ENGRAM = Path(sys.executable).with_name("engram")


@attrs.frozen
class Run:
    code: int
    out: str
    err: str

    @property
    def err_lines(self) -> list[str]:
        return [line for line in self.err.splitlines() if line.strip()]


RunCli = Callable[..., Run]


def _run(args: list[str], cwd: Path, env: dict[str, str], stdin: bytes | str | None) -> Run:
    data = stdin.encode() if isinstance(stdin, str) else stdin
    proc = subprocess.run(
        [str(ENGRAM), *args],
        cwd=cwd,
        input=data,
        capture_output=True,
        env=env,
        timeout=240,
        check=False,
    )
    return Run(proc.returncode, proc.stdout.decode(), proc.stderr.decode())


@pytest.fixture
def cli_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAM_") or engine_var(k)}
    env["ENGRAM_EMBED__MODEL"] = "none"  # the real model is exercised by one marked test
    env["COLUMNS"] = "200"
    return env


@pytest.fixture
def cli(tmp_workspace: Workspace, cli_env: dict[str, str]) -> RunCli:
    """``cli("list", "--json")`` runs ``engram`` inside the temp workspace."""

    def run(*args: str, stdin: bytes | str | None = None, cwd: Path | None = None) -> Run:
        return _run(list(args), cwd or tmp_workspace.root, cli_env, stdin)

    return run


def _importable(module: str, name: str) -> bool:
    import importlib

    try:
        return hasattr(importlib.import_module(module), name)
    except ImportError:
        return False


needs_store = pytest.mark.skipif(
    not _importable("engram.store", "MemoryStore"), reason="engram.store not available yet"
)
needs_retrieval = pytest.mark.skipif(
    not _importable("engram.retrieval", "Retriever"), reason="engram.retrieval not available yet"
)
