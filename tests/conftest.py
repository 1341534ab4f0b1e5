"""Shared fixtures. Each capability keeps its own tests in ``tests/<capability>/``."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# The SDK's ``stdio_client(params, errlog=sys.stderr)`` binds its default when
# ``mcp.client.stdio`` is first imported. An in-process CLI call under ``capsys``
# (tests/mcp/test_mcp_cli.py) imported it while ``sys.stderr`` was pytest's in-memory
# capture, and every later test that opened a stdio client without ``errlog`` failed with
# ``io.UnsupportedOperation: fileno`` (stop 32's reviews, running tests/mcp then
# tests/security in one process). Importing it here binds the session's stderr, which has
# a file descriptor. Engram itself passes ``errlog`` (engram/mcphub/transport.py).
import mcp.client.stdio  # noqa: F401
import pytest

from engram.workspace import Workspace

# Front ends work in-process in this suite unless a test turns the workspace engine on
# (tests/daemon, with its own runtime directory per test); engines any other test starts
# live in this session's own runtime directory and are stopped when the test ends.
_RUNTIME = tempfile.mkdtemp(prefix="engram-run-", dir="/tmp" if os.name == "posix" else None)
os.environ["ENGRAM_ENGINE"] = "off"
os.environ["ENGRAM_RUNTIME_DIR"] = _RUNTIME
os.environ["ENGRAM_ENGINE_IDLE_SECONDS"] = "20"
#: what :func:`default_env` keeps of the suite's engine settings
HOUSEKEEPING = ("ENGRAM_RUNTIME_DIR", "ENGRAM_ENGINE_IDLE_SECONDS")


def default_env() -> dict[str, str]:
    """``os.environ`` without Engram's settings, for a child run the way a user runs it
    (the workspace engine on, the default), but with the suite's housekeeping: an engine
    the child starts lives in this session's runtime directory, is stopped with it and
    exits after 20 s idle. A child given no ``ENGRAM_*`` at all started engines in the
    user's runtime directory that outlived the test by up to 10 minutes (the new-user
    walk of 28 Nov counted them beside a CI run)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("ENGRAM_") or k in HOUSEKEEPING}


def stop_engines(runtime_dir: str | Path) -> list[int]:
    """Kill every engine whose pid file is in ``runtime_dir``; the pids it found."""
    import json

    pids: list[int] = []
    for pid_file in Path(runtime_dir).glob("*.pid"):
        try:
            pid = int(json.loads(pid_file.read_text(encoding="utf-8"))["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        cmdline = Path(f"/proc/{pid}/cmdline")
        if cmdline.exists() and b"engine" not in cmdline.read_bytes():
            continue  # the engine is gone and its pid reused: not ours to kill
        pids.append(pid)
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    return pids


@pytest.fixture(autouse=True)
def _no_engine_outlives_its_test() -> Iterator[None]:
    """An engine a test started in the session's runtime directory ends with the test (it
    would otherwise live on for its idle time, competing with the tests after it)."""
    yield
    if any(Path(_RUNTIME).glob("*.pid")):
        stop_engines(_RUNTIME)


@pytest.fixture(scope="session", autouse=True)
def _no_engine_left_behind() -> Iterator[None]:
    yield
    stop_engines(_RUNTIME)
    import shutil

    shutil.rmtree(_RUNTIME, ignore_errors=True)


async def close_language_client(client: Any, limit: float = 60.0) -> bool:
    """End a pytest-lsp client's server as an editor does (``shutdown``, then ``exit``) and
    stop the client; True when the server outlived ``limit`` after that and was killed.

    pytest-lsp's ``stop`` waits for the server with no limit and tells it nothing. The
    language server tests gave the shutdown 10 s and let it go at that: on a loaded machine
    the shutdown (ending a background child, closing the stores) took longer, ``exit`` was
    never sent, and the run hung on a server waiting for it (tests/lsp, load 15).
    """
    import asyncio

    server = getattr(client, "_server", None)  # pygls' asyncio process of the server
    if client.error is None and client.capabilities is not None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(client.shutdown_async(None), limit)
        with contextlib.suppress(Exception):
            client.exit(None)
    killed = False
    if server is not None and server.returncode is None:
        try:
            await asyncio.wait_for(server.wait(), limit)
        except TimeoutError:
            killed = True
            with contextlib.suppress(ProcessLookupError):
                server.kill()
            await server.wait()
    await client.stop()
    return killed


def git(cwd: Path, *args: str) -> str:
    """Run git in ``cwd`` with a fixed identity (tests never depend on the user's config)."""
    env_args = ["-c", "user.name=Engram Test", "-c", "user.email=test@engram.invalid"]
    out = subprocess.run(
        ["git", *env_args, *args], cwd=cwd, check=True, capture_output=True, text=True
    )
    return out.stdout


@pytest.fixture
def tmp_workspace(tmp_path: Path) -> Workspace:
    """An empty git repository to act as a workspace."""
    root = tmp_path / "ws"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    return Workspace.open(root)
