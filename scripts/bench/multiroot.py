#!/usr/bin/env python3
"""What a multi-root editor window costs: one folder set up, others never set up.

In a temporary directory it makes three git repositories with a few Python files: ``a``
is set up (``.engram/`` with one memory, as ``engram remember`` leaves it), ``b`` and
``c`` were never set up. It starts ``engram serve`` as VS Code does (one server, the
three folders as workspace folders, ``ENGRAM_RUNTIME_DIR`` private to the run), waits
until every start-up progress the server began has ended (a folder left out begins none)
and the window has been idle SETTLE seconds, then reports, per process the window
started (the server and every workspace engine, found by their ``engine --workspace``
command line), the resident memory (``VmRSS``, ``RssAnon``), and which folders got a
``.engram/`` written.

Usage: scripts/bench/multiroot.py [--settle S] [--python PATH]
Run it with ``PYTHONPATH`` naming the tree to measure. Last stdout line: one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.client import LanguageClient

SOURCE = (
    "def f{i}(x):\n    return x + {i}\n\n\nclass C{i}:\n    def g(self):\n        return f{i}(1)\n"
)


def git(root: Path, *args: str) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "bench",
        "GIT_AUTHOR_EMAIL": "bench@example.com",
        "GIT_COMMITTER_NAME": "bench",
        "GIT_COMMITTER_EMAIL": "bench@example.com",
    }
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, env=env)


def make_repo(root: Path, files: int) -> None:
    (root / "src").mkdir(parents=True)
    for i in range(files):
        (root / "src" / f"m{i}.py").write_text(SOURCE.format(i=i))
    git(root, "init", "-q", "-b", "main")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "init")


def memory_kb(pid: int) -> dict[str, int]:
    out: dict[str, int] = {}
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return out
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "RssAnon", "VmHWM"):
            out[key] = int(value.split()[0])
    return out


def engines_of(base: Path) -> dict[str, int]:
    """Workspace folder name -> pid of each engine serving a folder under ``base``."""
    found: dict[str, int] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            argv = Path(f"/proc/{entry.name}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        words = [w.decode(errors="replace") for w in argv if w]
        if "engine" in words and "--workspace" in words:
            i = words.index("--workspace")
            if i + 1 < len(words) and words[i + 1].startswith(str(base)):
                found[Path(words[i + 1]).name] = int(entry.name)
    return found


async def run_window(python: str, base: Path, folders: list[Path], settle: float) -> dict[str, Any]:
    client = LanguageClient("engram-bench-multiroot", "1")
    ends: list[str] = []
    begins: list[float] = []
    messages: list[str] = []

    @client.feature(types.WINDOW_WORK_DONE_PROGRESS_CREATE)
    def _create(params: types.WorkDoneProgressCreateParams) -> None:
        return None

    @client.feature(types.PROGRESS)
    def _progress(params: types.ProgressParams) -> None:
        value = params.value
        kind = value.get("kind") if isinstance(value, dict) else getattr(value, "kind", None)
        if kind == "begin":
            begins.append(time.monotonic())
        if kind == "end":
            msg = value.get("message") if isinstance(value, dict) else value.message
            ends.append(str(msg))

    @client.feature(types.WINDOW_SHOW_MESSAGE)
    def _show(params: types.ShowMessageParams) -> None:
        messages.append(params.message)

    @client.feature(types.WORKSPACE_CONFIGURATION)
    def _configuration(params: types.ConfigurationParams) -> list[Any]:
        return [None for _ in params.items]

    @client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def _register(params: types.RegistrationParams) -> None:
        return None

    @client.feature(types.WINDOW_LOG_MESSAGE)
    def _log(params: types.LogMessageParams) -> None:
        return None

    await client.start_io(python, "-P", "-m", "engram", "serve", cwd=str(folders[0]))
    server = client._server
    assert server is not None
    started = time.monotonic()
    caps = types.ClientCapabilities(
        window=types.WindowClientCapabilities(work_done_progress=True),
        workspace=types.WorkspaceClientCapabilities(configuration=True, workspace_folders=True),
    )
    await client.initialize_async(
        types.InitializeParams(
            capabilities=caps,
            process_id=os.getpid(),
            root_uri=folders[0].as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=f.as_uri(), name=f.name) for f in folders],
            initialization_options={"embed": {"model": "none"}},
            client_info=types.ClientInfo(name="Visual Studio Code"),
        )
    )
    client.initialized(types.InitializedParams())
    deadline = time.monotonic() + 240
    # every started folder's progress has ended (a folder left out starts none)
    while time.monotonic() < deadline:
        await asyncio.sleep(0.5)
        if ends and len(ends) == len(begins) and time.monotonic() - begins[-1] > 2:
            break
    ready_s = round(time.monotonic() - started, 2)
    await asyncio.sleep(settle)
    processes = {"server": memory_kb(server.pid)}
    for name, pid in sorted(engines_of(base).items()):
        processes[f"engine {name}"] = memory_kb(pid)
    try:
        await asyncio.wait_for(client.shutdown_async(None), 10)
        client.exit(None)
    except Exception:
        pass
    await client.stop()
    return {"ready_s": ready_s, "progress_ends": ends, "messages": messages, "processes": processes}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--settle", type=float, default=5.0)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--files", type=int, default=30)
    args = parser.parse_args(argv)
    base = Path(tempfile.mkdtemp(prefix="engram-multiroot-"))
    runtime = base / "runtime"
    runtime.mkdir()
    os.environ["ENGRAM_RUNTIME_DIR"] = str(runtime)
    folders = [base / name for name in ("a", "b", "c")]
    try:
        for folder in folders:
            make_repo(folder, args.files)
        subprocess.run(  # a is set up: a memory remembered there (engram creates .engram/)
            [args.python, "-P", "-m", "engram", "remember", "--workspace", str(folders[0]),
             "--type", "gotcha", "f0 adds its argument", "--file", "src/m0.py"],
            check=True, capture_output=True,
            env={**os.environ, "ENGRAM_EMBED__MODEL": "none", "ENGRAM_ENGINE": "off"},
        )  # fmt: skip
        result = asyncio.run(run_window(args.python, base, folders, args.settle))
        result["written"] = {f.name: (f / ".engram").exists() for f in folders}
        procs = result["processes"]
        result["total_rss_mb"] = round(sum(p.get("VmRSS", 0) for p in procs.values()) / 1024, 1)
        result["total_anon_mb"] = round(sum(p.get("RssAnon", 0) for p in procs.values()) / 1024, 1)
        result["engines"] = sum(1 for k in procs if k.startswith("engine"))
        result["loadavg"] = Path("/proc/loadavg").read_text().split()[:3]
    finally:
        for pid in engines_of(base).values():
            with contextlib.suppress(OSError):
                os.kill(pid, 15)
        time.sleep(1)
        shutil.rmtree(base, ignore_errors=True)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
