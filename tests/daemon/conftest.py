"""The workspace engine, for real: console scripts, engine processes, sockets.

Each test gets its own short runtime directory (Unix socket paths are short), the engine
turned on for the processes it starts, a short idle time, and a teardown that stops
whatever engine it started, so no test leaves a process behind.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest
from tests.cli.conftest import Run
from tests.conftest import stop_engines

from engram.workspace import Workspace

ENGRAM = Path(sys.executable).with_name("engram")


@attrs.define
class EngineEnv:
    """Environment and helpers of one test's engines."""

    root: Path
    runtime: Path
    env: dict[str, str]

    def run(
        self, *args: str, stdin: bytes | str | None = None, env: dict[str, str] | None = None
    ) -> Run:
        data = stdin.encode() if isinstance(stdin, str) else stdin
        proc = subprocess.run(
            [str(ENGRAM), *args],
            cwd=self.root,
            input=data,
            capture_output=True,
            env=env or self.env,
            timeout=240,
            check=False,
        )
        return Run(proc.returncode, proc.stdout.decode(), proc.stderr.decode())

    def engine_pids(self) -> list[int]:
        import json

        pids = []
        for pid_file in self.runtime.glob("*.pid"):
            try:
                pids.append(int(json.loads(pid_file.read_text())["pid"]))
            except (OSError, ValueError, KeyError):
                continue
        return pids


@pytest.fixture
def engine_env(tmp_workspace: Workspace) -> Iterator[EngineEnv]:
    runtime = Path(tempfile.mkdtemp(prefix="eng-", dir="/tmp"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAM_")}
    env.update(
        {
            "ENGRAM_ENGINE": "auto",
            "ENGRAM_RUNTIME_DIR": str(runtime),
            "ENGRAM_ENGINE_IDLE_SECONDS": "30",
            "ENGRAM_EMBED__MODEL": "none",
            "COLUMNS": "200",
        }
    )
    yield EngineEnv(tmp_workspace.root, runtime, env)
    subprocess.run(
        [str(ENGRAM), "stop"], cwd=tmp_workspace.root, env=env, capture_output=True, timeout=60
    )
    stop_engines(runtime)
    shutil.rmtree(runtime, ignore_errors=True)
