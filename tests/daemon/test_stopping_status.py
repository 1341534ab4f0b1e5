"""An engine that was told to stop and is still going away is "stopping", not gone
(docs/engine.md "Faults"): ``engram status`` says so and ``engram stop`` waits for it.

Its socket closes at once on a stop, so both used to say "no engine" beside a process that
still held the store. What tells a stopping engine is its life lock (an OS lock that goes
with the process) held together with a pid file that says ``stopping``.
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
time.sleep(float(sys.argv[3]))
"""


def test_status_says_stopping_and_stop_waits_for_the_process(engine_env: EngineEnv) -> None:
    address = Address.for_workspace(engine_env.root, engine_env.env)
    # a stand-in for an engine going away: it holds the life lock and says "stopping"
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, address.file(".lock"), str(address.pid_file), "3"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        assert stopping_engine(address) == holder.pid
        status = engine_env.run("status", "--json")
        assert json.loads(status.out) == {"running": True, "state": "stopping",
                                          "pid": holder.pid,
                                          "workspace": str(engine_env.root)}  # fmt: skip
        assert f"is stopping (pid {holder.pid})" in engine_env.run("status").out
        stop = engine_env.run("stop")  # waits until it is gone
        assert stop.code == 0, stop.err
        assert holder.poll() is not None, "engram stop returned while the engine was going away"
        assert f"(pid {holder.pid}," in stop.out, stop.out
    finally:
        if holder.poll() is None:
            holder.kill()
        holder.wait(timeout=30)
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
