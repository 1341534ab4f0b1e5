"""An engine that was told to stop and is still going away is "stopping", not gone
(docs/engine.md "Faults"): ``engram status`` says so and ``engram stop`` waits for it.

Its socket closes at once on a stop, so both used to say "no engine" beside a process that
still held the store. What tells a stopping engine is its life lock (an OS lock that goes
with the process) held together with a pid file that says ``stopping``.

The stand-in engine goes away when the test says so, not after a fixed time: it lived 3 s,
and on a loaded machine ``engram stop`` started after it had gone (9 runs of 10 at load 12).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from filelock import FileLock

from engram.daemon.address import Address
from engram.daemon.client import stopping_engine

from .conftest import EngineEnv

_HOLDER = """
import json, sys, time
from filelock import FileLock
lock, pid_file = sys.argv[1], sys.argv[2]
life = FileLock(lock, mode=0o600)
life.acquire()
with open(pid_file, "w") as fh:
    fh.write(json.dumps({"pid": __import__("os").getpid(), "stopping": "signal SIGTERM"}))
print("held", flush=True)
sys.stdin.read()  # goes away when the test closes its stdin
"""

# ``engram stop`` as the CLI runs it, saying when it starts to wait for a stopping engine
_STOP = """
import sys
import engram.daemon.client as client
from engram.cli.entry import entry
real = client.wait_for_exit
def wait_for_exit(pid, seconds):
    print(f"waiting for {pid}", flush=True)
    return real(pid, seconds)
client.wait_for_exit = wait_for_exit
sys.argv = ["engram", "stop"]
sys.exit(entry())
"""


def test_status_says_stopping_and_stop_waits_for_the_process(engine_env: EngineEnv) -> None:
    address = Address.for_workspace(engine_env.root, engine_env.env)
    # a stand-in for an engine going away: it holds the life lock and says "stopping"
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, address.file(".lock"), str(address.pid_file)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    stop: subprocess.Popen[str] | None = None
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        assert stopping_engine(address) == holder.pid
        status = engine_env.run("status", "--json")
        assert json.loads(status.out) == {"running": True, "state": "stopping",
                                          "pid": holder.pid,
                                          "workspace": str(engine_env.root)}  # fmt: skip
        assert f"is stopping (pid {holder.pid})" in engine_env.run("status").out
        stop = subprocess.Popen(
            [sys.executable, "-c", _STOP], cwd=engine_env.root, env=engine_env.env,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert stop.stdout is not None and holder.stdin is not None
        waiting = stop.stdout.readline()  # or "" when it returned without waiting
        if waiting != f"waiting for {holder.pid}\n":
            out, err = stop.communicate(timeout=240)
            raise AssertionError(f"engram stop did not wait for the stopping engine: {waiting}"
                                 f"{out}{err}")  # fmt: skip
        assert holder.poll() is None
        assert stop.poll() is None, "engram stop returned while the engine was going away"
        holder.stdin.close()  # the engine goes away now
        holder.wait(timeout=60)
        out, err = stop.communicate(timeout=240)  # and the stop returns
        assert stop.returncode == 0, err
        assert f"(pid {holder.pid}," in out, out
    finally:
        for proc in (stop, holder):
            if proc is not None and proc.poll() is None:
                proc.kill()
            if proc is not None:
                proc.wait(timeout=30)
    # gone: the pid file it left says stopping, but nobody holds the lock any more
    assert stopping_engine(address) is None
    assert json.loads(engine_env.run("status", "--json").out)["running"] is False


def test_a_pid_file_without_its_lock_is_no_engine(engine_env: EngineEnv) -> None:
    """A pid file a killed engine left (its pid may be someone else's now) is not trusted."""
    address = Address.for_workspace(engine_env.root, engine_env.env)
    address.pid_file.write_text(json.dumps({"pid": os.getpid(), "stopping": "engram stop"}))
    assert stopping_engine(address) is None
    life = FileLock(address.file(".lock"), mode=0o600)
    with life:
        assert stopping_engine(address) == os.getpid()
    assert stopping_engine(address) is None  # released: gone
