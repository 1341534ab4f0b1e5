"""End-to-end wiring across packages: the real CLI (in process), store, history, observer."""

from __future__ import annotations

import contextlib
import io
import os
import sys
from pathlib import Path

import pytest
from tests.cli.conftest import Run, RunCli, engine_var

from engram.workspace import Workspace


@pytest.fixture
def cli(tmp_workspace: Workspace, monkeypatch: pytest.MonkeyPatch) -> RunCli:
    """``engram`` through ``engram.cli.main.main`` in this process, keyword search only."""
    from engram.cli.main import main

    for key in [k for k in os.environ if k.startswith("ENGRAM_") and not engine_var(k)]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("ENGRAM_EMBED__MODEL", "none")

    def run(*args: str, stdin: bytes | str | None = None, cwd: Path | None = None) -> Run:
        monkeypatch.chdir(cwd or tmp_workspace.root)
        data = stdin.encode() if isinstance(stdin, str) else (stdin or b"")
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as exc:
                code = int(exc.code or 0)
        return Run(code, out.getvalue(), err.getvalue())

    return run


def ok(run: Run) -> Run:
    assert run.code == 0, run.err
    assert "Traceback" not in run.err
    return run
