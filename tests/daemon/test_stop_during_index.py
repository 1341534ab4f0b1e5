"""``engram stop`` (SIGTERM) while the engine indexes: the run is cancelled, the process and
its parse workers go, and the next index resumes (docs/engine.md "Faults").

The engine used to go on indexing after the stop: its socket was closed at once, so
``engram stop``/``status`` said none ran, while the process kept ~740 MB and its parse
workers until the whole run ended (``engram stop`` gave up after 15 s and sent a SIGTERM
that changed nothing); a cancelled history mining also hung on ``git log``'s full pipe.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.cli.test_index_one_at_a_time import graph_rows

from engram.daemon.client import pid_alive

from .conftest import ENGRAM, EngineEnv

FILES = 3000

_FRONT_END = """
import os, sys
from engram.daemon.address import Address
from engram.daemon.client import Connection
from engram.daemon.wire import WireError
root = sys.argv[1]
request = {"argv": ["index", "--workspace", root, "--no-embed"], "cwd": root,
           "stream_stderr": True}
connection = Connection.open(Address.for_workspace(root), "cli")
try:
    connection.call("cli", request, on_stderr=lambda text: (sys.stderr.write(text),
                                                            sys.stderr.flush()))
except WireError:
    sys.exit(3)
"""


def _write_workspace(root: Path) -> None:
    """Enough files that the parse phase is still at work when the stop comes."""
    for d in range(FILES // 100):
        pkg = root / f"pkg{d}"
        pkg.mkdir()
        (pkg / "__init__.py").write_text("")
        for n in range(100):
            funcs = "".join(
                f"def f{n}_{k}(x):\n    y = helper(x, {k})\n    return [y, x, {k}]\n\n\n"
                for k in range(30)
            )
            (pkg / f"m{n}.py").write_text(f"from pkg{d} import helper\n\n\n{funcs}")


def _children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found |= {int(c) for c in (task / "children").read_text().split()}
        except OSError:
            continue
    return found


def test_stop_cancels_the_index_and_the_next_run_resumes(
    engine_env: EngineEnv, tmp_path: Path
) -> None:
    root = engine_env.root
    _write_workspace(root)
    env = {
        **engine_env.env,
        "ENGRAM_PROGRESS_SECONDS": "0",
        "ENGRAM_INDEX__WORKERS": "2",  # parse workers even on a one-CPU runner
        "ENGRAM_INDEX__WORKERS_MIN_FILES": "100",
    }
    assert engine_env.run("stats", env=env).code == 0  # starts the engine
    [engine] = engine_env.engine_pids()
    # a front end that asks the engine for the index and never takes it over in-process
    # (the thin CLI would, after the stop: an editor's link does not)
    index = subprocess.Popen(
        [sys.executable, "-c", _FRONT_END, str(root)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert index.stderr is not None
        for line in index.stderr:  # the engine is at work on the parse phase
            if line.startswith("engram: indexing code: ") and "/" in line and " 0/" not in line:
                break
        workers = _children(engine)
        assert workers, "the engine parses in worker processes"
        os.kill(engine, signal.SIGTERM)  # as `engram stop` does after asking
        stop = engine_env.run("stop", env=env)  # waits for an engine that is stopping
        index.stderr.read()
        assert index.wait(timeout=60) == 3  # its connection ended without a reply
    finally:
        if index.poll() is None:
            index.kill()
    assert stop.code == 0, stop.err
    assert "did not stop in time" not in stop.err, stop.err
    # stop returns once the process is gone, with its workers
    assert not pid_alive(engine), f"engine {engine} still runs after `engram stop`: {stop}"
    assert not [w for w in workers if pid_alive(w)], "parse workers outlived the engine"
    status = engine_env.run("status", "--json", env=env)
    assert json.loads(status.out)["running"] is False, status.out
    log = (root / ".engram" / "logs" / "engine.log").read_text()
    # the run was cancelled, not cut off by an engine closed under it, nor finished
    assert "interrupted (the process is stopping)" in log, log[-3000:]
    assert "request cli failed" not in log and " ERROR " not in log, log[-3000:]

    resumed = engine_env.run("index", "--no-embed", "--json", env=env)
    assert resumed.code == 0, resumed.err
    code = json.loads(resumed.out)["code"]
    # the stopped run kept what it committed; this one did the rest
    assert code["files_unchanged"] > 0 and code["files_indexed"] > 0, code
    assert code["files_unchanged"] + code["files_indexed"] == code["files_seen"], code

    single = tmp_path / "single"
    subprocess.run(["cp", "-r", str(root), str(single)], check=True)
    subprocess.run(["rm", "-rf", str(single / ".engram")], check=True)
    once = subprocess.run(
        [str(ENGRAM), "index", "--no-embed", "--workspace", str(single)],
        env={**env, "ENGRAM_ENGINE": "off"}, capture_output=True, text=True, timeout=600,
        check=False,
    )  # fmt: skip
    assert once.returncode == 0, once.stderr
    assert graph_rows(root / ".engram" / "graph.sqlite") == graph_rows(
        single / ".engram" / "graph.sqlite"
    )
